//! SHA-256 with the constraints of bellpepper's `sha256`, for witness-only synthesis.
//!
//! bellpepper 0.2's `UInt32::addmany` and `MultiEq` build the linear combination of every
//! 32-bit addition eagerly, outside `enforce`, so a constraint system that only computes
//! the witness still pays for them: about four fifths of a witness-only SHA-256. This
//! gadget allocates the same variables and enforces the same constraints in the same
//! order (tested against bellpepper's), and builds those combinations only when
//! [`ConstraintSystem::is_witness_generator`] says the constraints are kept. Everything
//! but the additions is bellpepper's `UInt32`.

use std::mem;

use bellpepper::gadgets::uint32::UInt32;
use bellpepper_core::{
    boolean::{AllocatedBit, Boolean},
    ConstraintSystem, LinearCombination, SynthesisError,
};
use blstrs::Scalar;
use ff::{Field, PrimeField};

#[rustfmt::skip]
const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

const IV: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// The SHA-256 digest of `input` (big-endian bits, a whole number of bytes), as bits.
pub fn sha256<CS: ConstraintSystem<Scalar>>(mut cs: CS, input: &[Boolean]) -> Result<Vec<Boolean>, SynthesisError> {
    assert!(input.len() % 8 == 0, "SHA-256 takes whole bytes");
    let length = input.len() as u64;
    let mut padded = input.to_vec();
    padded.push(Boolean::constant(true));
    while (padded.len() + 64) % 512 != 0 {
        padded.push(Boolean::constant(false));
    }
    padded.extend((0..64).rev().map(|i| Boolean::constant((length >> i) & 1 == 1)));
    let mut state: Vec<UInt32> = IV.iter().map(|&v| UInt32::constant(v)).collect();
    for (i, block) in padded.chunks(512).enumerate() {
        state = compress(cs.namespace(|| format!("block {i}")), block, &state)?;
    }
    Ok(state.into_iter().flat_map(UInt32::into_bits_be).collect())
}

/// A sum not yet reduced to bits: bellpepper's deferred `a` and `e`, whose additions are
/// folded into the next one that needs their bits.
enum Word {
    Deferred(Vec<UInt32>),
    Concrete(UInt32),
}

impl Word {
    fn resolve<CS: ConstraintSystem<Scalar>>(
        self,
        cs: CS,
        sums: &mut Sums,
        others: &[UInt32],
    ) -> Result<UInt32, SynthesisError> {
        match self {
            Word::Concrete(v) => Ok(v),
            Word::Deferred(mut v) => {
                v.extend_from_slice(others);
                add_many(cs, sums, &v)
            }
        }
    }
}

/// One application of the compression function to the 512-bit `block`.
fn compress<CS: ConstraintSystem<Scalar>>(
    mut cs: CS,
    block: &[Boolean],
    state: &[UInt32],
) -> Result<Vec<UInt32>, SynthesisError> {
    assert_eq!((block.len(), state.len()), (512, 8));
    let mut sums = Sums::default();
    let mut w: Vec<UInt32> = block.chunks(32).map(UInt32::from_bits_be).collect();
    for i in 16..64 {
        let cs = &mut cs.namespace(|| format!("w extension {i}"));
        let mut s0 = w[i - 15].rotr(7);
        s0 = s0.xor(cs.namespace(|| "first xor for s0"), &w[i - 15].rotr(18))?;
        s0 = s0.xor(cs.namespace(|| "second xor for s0"), &w[i - 15].shr(3))?;
        let mut s1 = w[i - 2].rotr(17);
        s1 = s1.xor(cs.namespace(|| "first xor for s1"), &w[i - 2].rotr(19))?;
        s1 = s1.xor(cs.namespace(|| "second xor for s1"), &w[i - 2].shr(10))?;
        let sum = [w[i - 16].clone(), s0, w[i - 7].clone(), s1];
        let next = add_many(cs.namespace(|| "computation of w[i]"), &mut sums, &sum)?;
        w.push(next);
    }

    let mut a = Word::Concrete(state[0].clone());
    let [mut b, mut c, mut d] = [1, 2, 3].map(|i| state[i].clone());
    let mut e = Word::Concrete(state[4].clone());
    let [mut f, mut g, mut h] = [5, 6, 7].map(|i| state[i].clone());
    for (i, k) in ROUND_CONSTANTS.iter().enumerate() {
        let cs = &mut cs.namespace(|| format!("compression round {i}"));
        let new_e = e.resolve(cs.namespace(|| "deferred e computation"), &mut sums, &[])?;
        let mut s1 = new_e.rotr(6);
        s1 = s1.xor(cs.namespace(|| "first xor for s1"), &new_e.rotr(11))?;
        s1 = s1.xor(cs.namespace(|| "second xor for s1"), &new_e.rotr(25))?;
        let ch = UInt32::sha256_ch(cs.namespace(|| "ch"), &new_e, &f, &g)?;
        let temp1 = [h, s1, ch, UInt32::constant(*k), w[i].clone()];

        let new_a = a.resolve(cs.namespace(|| "deferred a computation"), &mut sums, &[])?;
        let mut s0 = new_a.rotr(2);
        s0 = s0.xor(cs.namespace(|| "first xor for s0"), &new_a.rotr(13))?;
        s0 = s0.xor(cs.namespace(|| "second xor for s0"), &new_a.rotr(22))?;
        let maj = UInt32::sha256_maj(cs.namespace(|| "maj"), &new_a, &b, &c)?;

        h = g;
        g = f;
        f = new_e;
        e = Word::Deferred(temp1.iter().cloned().chain([d]).collect());
        d = c;
        c = b;
        b = new_a;
        a = Word::Deferred(temp1.into_iter().chain([s0, maj]).collect());
    }

    let h0 = a.resolve(cs.namespace(|| "deferred h0 computation"), &mut sums, &state[..1])?;
    let h1 = add_many(cs.namespace(|| "new h1"), &mut sums, &[state[1].clone(), b])?;
    let h2 = add_many(cs.namespace(|| "new h2"), &mut sums, &[state[2].clone(), c])?;
    let h3 = add_many(cs.namespace(|| "new h3"), &mut sums, &[state[3].clone(), d])?;
    let h4 = e.resolve(cs.namespace(|| "deferred h4 computation"), &mut sums, &state[4..5])?;
    let h5 = add_many(cs.namespace(|| "new h5"), &mut sums, &[state[5].clone(), f])?;
    let h6 = add_many(cs.namespace(|| "new h6"), &mut sums, &[state[6].clone(), g])?;
    let h7 = add_many(cs.namespace(|| "new h7"), &mut sums, &[state[7].clone(), h])?;
    sums.flush(&mut cs);
    Ok(vec![h0, h1, h2, h3, h4, h5, h6, h7])
}

/// `operands` added modulo 2^32, with the variables and constraint terms of bellpepper's
/// `UInt32::addmany`: the full sum is allocated as bits and its equality with the operands
/// is enforced through `sums`.
fn add_many<CS: ConstraintSystem<Scalar>>(
    mut cs: CS,
    sums: &mut Sums,
    operands: &[UInt32],
) -> Result<UInt32, SynthesisError> {
    assert!((2..=10).contains(&operands.len()), "2 to 10 operands keep the sum below the field's capacity");
    let bits: Vec<Vec<Boolean>> = operands.iter().map(|op| op.clone().into_bits()).collect();
    let sum: Option<u64> = bits.iter().map(|bits| value(bits).map(u64::from)).sum();
    if bits.iter().flatten().all(Boolean::is_constant) {
        if let Some(sum) = sum {
            return Ok(UInt32::constant(sum as u32));
        }
    }
    let width = 64 - (operands.len() as u64 * u64::from(u32::MAX)).leading_zeros() as usize;
    let result = (0..width)
        .map(|i| AllocatedBit::alloc(cs.namespace(|| format!("result bit {i}")), sum.map(|v| (v >> i) & 1 == 1)))
        .collect::<Result<Vec<_>, _>>()?;
    sums.enforce_equal(
        &mut cs,
        width,
        || {
            let mut lc = LinearCombination::zero();
            for bits in &bits {
                let mut coeff = Scalar::ONE;
                for bit in bits {
                    lc = lc + &bit.lc(CS::one(), coeff);
                    coeff = coeff.double();
                }
            }
            lc
        },
        || {
            let mut lc = LinearCombination::zero();
            let mut coeff = Scalar::ONE;
            for bit in &result {
                lc = lc + (coeff, bit.get_variable());
                coeff = coeff.double();
            }
            lc
        },
    );
    let low: Vec<Boolean> = result.into_iter().take(32).map(Boolean::from).collect();
    Ok(UInt32::from_bits(&low))
}

/// The value of little-endian `bits`, if every bit has one.
fn value(bits: &[Boolean]) -> Option<u32> {
    bits.iter().rev().try_fold(0u32, |v, bit| bit.get_value().map(|b| v << 1 | u32::from(b)))
}

/// bellpepper's `MultiEq`: equalities of additions packed side by side into one
/// constraint, `lhs * 1 = rhs`, until the field's capacity is used up.
#[derive(Default)]
struct Sums {
    constraints: usize,
    bits_used: usize,
    lhs: LinearCombination<Scalar>,
    rhs: LinearCombination<Scalar>,
}

impl Sums {
    /// Adds `lhs = rhs`, both below 2^`bits`; the combinations are built only if `cs`
    /// keeps constraints.
    fn enforce_equal<CS: ConstraintSystem<Scalar>>(
        &mut self,
        cs: &mut CS,
        bits: usize,
        lhs: impl FnOnce() -> LinearCombination<Scalar>,
        rhs: impl FnOnce() -> LinearCombination<Scalar>,
    ) {
        if Scalar::CAPACITY as usize <= self.bits_used + bits {
            self.flush(cs);
        }
        if !cs.is_witness_generator() {
            let shift = Scalar::from(2).pow_vartime([self.bits_used as u64]);
            self.lhs = mem::replace(&mut self.lhs, LinearCombination::zero()) + (shift, &lhs());
            self.rhs = mem::replace(&mut self.rhs, LinearCombination::zero()) + (shift, &rhs());
        }
        self.bits_used += bits;
    }

    /// Enforces the packed equalities, if any.
    fn flush<CS: ConstraintSystem<Scalar>>(&mut self, cs: &mut CS) {
        if self.bits_used == 0 {
            return;
        }
        let lhs = mem::replace(&mut self.lhs, LinearCombination::zero());
        let rhs = mem::replace(&mut self.rhs, LinearCombination::zero());
        cs.enforce(|| format!("multieq {}", self.constraints), |_| lhs, |lc| lc + CS::one(), |_| rhs);
        self.bits_used = 0;
        self.constraints += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper::util_cs::witness_cs::WitnessCS;
    use bellpepper_core::{Index, Variable};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A combination's nonzero terms, sorted: variable and coefficient bytes.
    type Terms = Vec<(Index, [u8; 32])>;

    /// Every constraint as its three combinations' terms, and the values.
    #[derive(Default, PartialEq, Debug)]
    struct Constraints {
        rows: Vec<[Terms; 3]>,
        inputs: Vec<Scalar>,
        aux: Vec<Scalar>,
    }

    fn terms(lc: LinearCombination<Scalar>) -> Terms {
        let mut terms: Vec<_> = lc
            .iter()
            .filter(|(_, c)| !bool::from(c.is_zero()))
            .map(|(v, c)| (v.get_unchecked(), c.to_repr()))
            .collect();
        terms.sort_by_key(|(index, _)| match index {
            Index::Input(i) => (0, *i),
            Index::Aux(i) => (1, *i),
        });
        terms
    }

    impl ConstraintSystem<Scalar> for Constraints {
        type Root = Self;

        fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
        where
            F: FnOnce() -> Result<Scalar, SynthesisError>,
            A: FnOnce() -> AR,
            AR: Into<String>,
        {
            self.aux.push(f()?);
            Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
        }

        fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
        where
            F: FnOnce() -> Result<Scalar, SynthesisError>,
            A: FnOnce() -> AR,
            AR: Into<String>,
        {
            self.inputs.push(f()?);
            Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
        }

        fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
        where
            A: FnOnce() -> AR,
            AR: Into<String>,
            LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
            LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
            LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        {
            let zero = LinearCombination::zero;
            self.rows.push([terms(a(zero())), terms(b(zero())), terms(c(zero()))]);
        }

        fn push_namespace<NR: Into<String>, N: FnOnce() -> NR>(&mut self, _: N) {}

        fn pop_namespace(&mut self) {}

        fn get_root(&mut self) -> &mut Self {
            self
        }
    }

    /// Input bits of `bytes` bytes: allocated from `rng`, with a few constants among them
    /// (constant operands take other paths through the additions).
    fn input<CS: ConstraintSystem<Scalar>>(cs: &mut CS, bytes: usize, seed: u64) -> Vec<Boolean> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..8 * bytes)
            .map(|i| match i % 97 {
                0 => Boolean::constant(rng.gen()),
                _ => AllocatedBit::alloc(cs.namespace(|| format!("in {i}")), Some(rng.gen())).unwrap().into(),
            })
            .collect()
    }

    fn digest<CS: ConstraintSystem<Scalar>>(cs: &mut CS, bytes: usize, ours: bool) -> Vec<Option<bool>> {
        let bits = input(cs, bytes, bytes as u64);
        let out = if ours {
            sha256(cs.namespace(|| "sha"), &bits)
        } else {
            bellpepper::gadgets::sha256::sha256(cs.namespace(|| "sha"), &bits)
        };
        out.unwrap().iter().map(Boolean::get_value).collect()
    }

    /// No input (all constants), one block, two, and 120 bytes, whose padding spills into a
    /// third block of constants after a state that is not.
    const LENGTHS: [usize; 4] = [0, 32, 64, 120];

    #[test]
    fn same_constraints_and_values_as_bellpepper() {
        for bytes in LENGTHS {
            let (mut ours, mut theirs) = (Constraints::default(), Constraints::default());
            let digest_ours = digest(&mut ours, bytes, true);
            assert_eq!(digest_ours, digest(&mut theirs, bytes, false), "{bytes} bytes");
            assert_eq!(ours.rows.len(), theirs.rows.len(), "{bytes} bytes");
            assert!(ours == theirs, "{bytes} bytes: the constraint systems differ");
        }
    }

    #[test]
    fn digest_is_sha256() {
        use sha2::Digest;
        let mut cs = WitnessCS::<Scalar>::new();
        let message = b"abc";
        let bits: Vec<Boolean> = bellpepper::gadgets::multipack::bytes_to_bits(message)
            .into_iter()
            .map(|b| AllocatedBit::alloc(&mut cs, Some(b)).unwrap().into())
            .collect();
        let out = sha256(&mut cs, &bits).unwrap();
        let expected = bellpepper::gadgets::multipack::bytes_to_bits(&sha2::Sha256::digest(message));
        assert_eq!(out.iter().map(|b| b.get_value().unwrap()).collect::<Vec<_>>(), expected);
    }

    #[test]
    fn witness_generators_get_the_same_witness() {
        for bytes in LENGTHS {
            let mut full = Constraints::default();
            digest(&mut full, bytes, true);
            let mut witness = WitnessCS::<Scalar>::new();
            digest(&mut witness, bytes, true);
            assert_eq!(witness.scalar_aux(), full.aux, "{bytes} bytes");
            assert_eq!(witness.scalar_inputs()[1..], full.inputs[..], "{bytes} bytes");
        }
    }
}
