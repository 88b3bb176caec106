//! A backend to copy. Its three required calls are CPU reference arithmetic, a few lines
//! each: replace each body with your device's code, and `bellhop conformance` tells you
//! where it diverges. Everything else is provided: `compute_h` (built from `ntt`; override
//! it to keep the data on the device), the input checks (the seam refuses what breaks the
//! contract before these calls run), panics caught at the boundary, options parsing.

use bellhop_plugin_sdk::{
    backend::{Backend, BackendPlugin, NttDirection},
    cast, cast_slice, cast_slice_mut,
    options::NoOptions,
    types::{Fr, G1Affine, G1Projective, G2Affine, G2Projective},
    Capabilities, Description, DeviceInfo, ErrorKind, OpenRequest, PluginError,
};
use blstrs::Scalar;
use ff::{Field, PrimeField};

/// The opened backend: a device handle would live here.
pub struct Template;

impl Backend for Template {
    fn msm_g1(&self, bases: &[G1Affine], scalars: &[Fr]) -> Result<G1Projective, PluginError> {
        let bases: &[blstrs::G1Affine] = cast_slice(bases);
        Ok(cast(bases.iter().zip(cast_slice::<Fr, Scalar>(scalars)).map(|(b, s)| b * s).sum::<blstrs::G1Projective>()))
    }

    fn msm_g2(&self, bases: &[G2Affine], scalars: &[Fr]) -> Result<G2Projective, PluginError> {
        let bases: &[blstrs::G2Affine] = cast_slice(bases);
        Ok(cast(bases.iter().zip(cast_slice::<Fr, Scalar>(scalars)).map(|(b, s)| b * s).sum::<blstrs::G2Projective>()))
    }

    fn ntt(&self, values: &mut [Fr], direction: NttDirection) -> Result<(), PluginError> {
        let values: &mut [Scalar] = cast_slice_mut(values);
        let n = values.len();
        // The primitive n-th root of unity, and the coset generator g.
        let omega = (n.trailing_zeros()..Scalar::S).fold(Scalar::ROOT_OF_UNITY, |w, _| w.square());
        let (g, n_inverse) = (Scalar::MULTIPLICATIVE_GENERATOR, Scalar::from(n as u64).invert().unwrap());
        match direction {
            NttDirection::Forward => radix2(values, omega),
            NttDirection::Inverse => {
                radix2(values, omega.invert().unwrap());
                scale_by_powers(values, Scalar::ONE, n_inverse);
            }
            NttDirection::CosetForward => {
                scale_by_powers(values, g, Scalar::ONE);
                radix2(values, omega);
            }
            NttDirection::CosetInverse => {
                radix2(values, omega.invert().unwrap());
                scale_by_powers(values, g.invert().unwrap(), n_inverse);
            }
        }
        Ok(())
    }
}

/// `v_i <- sum_j v_j omega^(ij)`, in place: bit-reversal, then log2(n) butterfly passes.
fn radix2(v: &mut [Scalar], omega: Scalar) {
    let (n, log_n) = (v.len(), v.len().trailing_zeros());
    for i in 1..n {
        let j = i.reverse_bits() >> (usize::BITS - log_n);
        if i < j {
            v.swap(i, j);
        }
    }
    let mut half = 1;
    while half < n {
        let step = omega.pow_vartime([(n / (2 * half)) as u64]);
        for block in v.chunks_mut(2 * half) {
            let (low, high) = block.split_at_mut(half);
            let mut w = Scalar::ONE;
            for (a, b) in low.iter_mut().zip(high) {
                let t = *b * w;
                (*a, *b) = (*a + t, *a - t);
                w *= step;
            }
        }
        half *= 2;
    }
}

/// `v_i <- v_i · factor · base^i`.
fn scale_by_powers(v: &mut [Scalar], base: Scalar, factor: Scalar) {
    let mut power = factor;
    for x in v {
        *x *= power;
        power *= base;
    }
}

impl BackendPlugin for Template {
    type Options = NoOptions;

    fn describe() -> Description {
        Description {
            name: "template".into(),
            description: "a backend to copy: CPU reference arithmetic (naive MSM, radix-2 NTT)".into(),
            capabilities: Capabilities::MSM_G1 | Capabilities::MSM_G2 | Capabilities::NTT | Capabilities::COMPUTE_H,
            devices: vec![DeviceInfo {
                index: 0,
                name: "reference arithmetic".into(),
                memory_bytes: 0,
                compute_units: 1,
            }],
        }
    }

    fn open(request: &OpenRequest, _: NoOptions) -> Result<Self, PluginError> {
        match request.device {
            0 => Ok(Template),
            d => Err(PluginError::new(
                ErrorKind::NO_DEVICE,
                format!("device {d} does not exist; set [backend] device = 0"),
            )),
        }
    }
}

bellhop_plugin_sdk::export_backend!(Template);

#[cfg(test)]
mod tests {
    use super::*;

    bellhop_conformance::conformance_tests!(template, Template);
}
