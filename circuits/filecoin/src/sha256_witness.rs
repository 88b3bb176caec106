//! The witness of bellpepper's SHA-256 gadget (`bellperson::gadgets::sha256::sha256`),
//! computed on plain bits.
//!
//! The gadget builds a linear combination for every addition and bit operation even when
//! the constraint system only wants the witness; that is most of PoRep's synthesis time.
//! [`sha256`] allocates the same variables in the same order with the same values, and
//! builds nothing else, so that a witness generator's assignment is the gadget's, value
//! for value. It follows the gadget's every case: which bit operations allocate depends
//! on which operands are constants and which are negated variables, as in bellpepper-core's
//! `Boolean`. The tests hold it to the gadget on inputs that mix all three.

use bellpepper_core::{boolean::Boolean, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use ff::Field;

/// A bit of the gadget: a constant, a variable (`Is`), or a variable's negation (`Not`);
/// each with the bit's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bit {
    /// A constant bit, no variable.
    Const(bool),
    /// An allocated bit of this value.
    Is(bool),
    /// The negation of an allocated bit; this is its (negated) value.
    Not(bool),
}

impl Bit {
    /// The bit of `boolean`, or `AssignmentMissing` if it has no value.
    pub fn of(boolean: &Boolean) -> Result<Self, SynthesisError> {
        let value = boolean.get_value().ok_or(SynthesisError::AssignmentMissing)?;
        Ok(match boolean {
            Boolean::Constant(_) => Self::Const(value),
            Boolean::Is(_) => Self::Is(value),
            Boolean::Not(_) => Self::Not(value),
        })
    }

    /// The bit's value.
    pub fn value(self) -> bool {
        match self {
            Self::Const(v) | Self::Is(v) | Self::Not(v) => v,
        }
    }

    fn is_constant(self) -> bool {
        matches!(self, Self::Const(_))
    }

    fn not(self) -> Self {
        match self {
            Self::Const(v) => Self::Const(!v),
            Self::Is(v) => Self::Not(!v),
            Self::Not(v) => Self::Is(!v),
        }
    }
}

/// Where the allocated bits go: the constraint system, one variable each.
struct Witness<'a, CS> {
    cs: &'a mut CS,
}

impl<CS: ConstraintSystem<Scalar>> Witness<'_, CS> {
    /// Allocates a variable holding `value`, as `Boolean::Is`.
    fn alloc(&mut self, value: bool) -> Result<Bit, SynthesisError> {
        self.cs.alloc(|| "", || Ok(if value { Scalar::ONE } else { Scalar::ZERO }))?;
        Ok(Bit::Is(value))
    }

    /// `Boolean::xor`.
    fn xor(&mut self, a: Bit, b: Bit) -> Result<Bit, SynthesisError> {
        Ok(match (a, b) {
            (Bit::Const(false), x) | (x, Bit::Const(false)) => x,
            (Bit::Const(true), x) | (x, Bit::Const(true)) => x.not(),
            // bellpepper xors the variable with the negation's variable, then negates.
            (Bit::Is(_), Bit::Not(_)) | (Bit::Not(_), Bit::Is(_)) => self.alloc(!(a.value() ^ b.value()))?.not(),
            _ => self.alloc(a.value() ^ b.value())?,
        })
    }

    /// `Boolean::and`.
    fn and(&mut self, a: Bit, b: Bit) -> Result<Bit, SynthesisError> {
        Ok(match (a, b) {
            (Bit::Const(false), _) | (_, Bit::Const(false)) => Bit::Const(false),
            (Bit::Const(true), x) | (x, Bit::Const(true)) => x,
            _ => self.alloc(a.value() & b.value())?,
        })
    }

    /// `Boolean::sha256_ch`: (a and b) xor ((not a) and c).
    fn ch(&mut self, a: Bit, b: Bit, c: Bit) -> Result<Bit, SynthesisError> {
        let value = (a.value() & b.value()) ^ (!a.value() & c.value());
        Ok(match (a, b, c) {
            (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => Bit::Const(value),
            (Bit::Const(false), _, c) => c,
            (a, Bit::Const(false), c) => self.and(a.not(), c)?,
            (a, b, Bit::Const(false)) => self.and(a, b)?,
            (a, b, Bit::Const(true)) => self.and(a, b.not())?.not(),
            (a, Bit::Const(true), c) => self.and(a.not(), c.not())?.not(),
            _ => self.alloc(value)?,
        })
    }

    /// `Boolean::sha256_maj`: (a and b) xor (a and c) xor (b and c).
    fn maj(&mut self, a: Bit, b: Bit, c: Bit) -> Result<Bit, SynthesisError> {
        let value = (a.value() & b.value()) ^ (a.value() & c.value()) ^ (b.value() & c.value());
        Ok(match (a, b, c) {
            (Bit::Const(_), Bit::Const(_), Bit::Const(_)) => Bit::Const(value),
            (Bit::Const(false), b, c) => self.and(b, c)?,
            (a, Bit::Const(false), c) => self.and(a, c)?,
            (a, b, Bit::Const(false)) => self.and(a, b)?,
            (a, b, Bit::Const(true)) => self.and(a.not(), b.not())?.not(),
            (a, Bit::Const(true), c) => self.and(a.not(), c.not())?.not(),
            (Bit::Const(true), b, c) => self.and(b.not(), c.not())?.not(),
            _ => {
                // The majority first, then b and c (the gadget's constraint uses both).
                let maj = self.alloc(value)?;
                self.and(b, c)?;
                maj
            }
        })
    }
}

/// `UInt32`: bits least significant first, and the value.
#[derive(Clone, Copy, Debug)]
struct Word {
    bits: [Bit; 32],
    value: u32,
}

impl Word {
    fn constant(value: u32) -> Self {
        Self { bits: std::array::from_fn(|i| Bit::Const((value >> i) & 1 == 1)), value }
    }

    fn from_bits_be(bits: &[Bit]) -> Self {
        let bits: [Bit; 32] = std::array::from_fn(|i| bits[31 - i]);
        let value = bits.iter().enumerate().fold(0, |v, (i, b)| v | (u32::from(b.value()) << i));
        Self { bits, value }
    }

    fn rotr(&self, by: usize) -> Self {
        Self { bits: std::array::from_fn(|i| self.bits[(i + by) % 32]), value: self.value.rotate_right(by as u32) }
    }

    fn shr(&self, by: usize) -> Self {
        Self {
            bits: std::array::from_fn(|i| self.bits.get(i + by).copied().unwrap_or(Bit::Const(false))),
            value: self.value >> by,
        }
    }
}

impl<CS: ConstraintSystem<Scalar>> Witness<'_, CS> {
    fn bitwise(
        &mut self,
        words: [&Word; 3],
        op: fn(&mut Self, Bit, Bit, Bit) -> Result<Bit, SynthesisError>,
    ) -> Result<Word, SynthesisError> {
        let mut bits = [Bit::Const(false); 32];
        for (i, bit) in bits.iter_mut().enumerate() {
            *bit = op(self, words[0].bits[i], words[1].bits[i], words[2].bits[i])?;
        }
        let value = bits.iter().enumerate().fold(0, |v, (i, b)| v | (u32::from(b.value()) << i));
        Ok(Word { bits, value })
    }

    fn xor_word(&mut self, a: &Word, b: &Word) -> Result<Word, SynthesisError> {
        self.bitwise([a, b, b], |w, a, b, _| w.xor(a, b))
    }

    /// `UInt32::addmany`: the sum's bits (as many as the largest sum needs) allocated,
    /// unless every operand bit is constant.
    fn addmany(&mut self, operands: &[Word]) -> Result<Word, SynthesisError> {
        let sum: u64 = operands.iter().map(|w| u64::from(w.value)).sum();
        if operands.iter().all(|w| w.bits.iter().all(|b| b.is_constant())) {
            return Ok(Word::constant(sum as u32));
        }
        let mut max = operands.len() as u64 * u64::from(u32::MAX);
        let mut bits = [Bit::Const(false); 32];
        let mut i = 0;
        while max != 0 {
            let bit = self.alloc((sum >> i) & 1 == 1)?;
            if i < 32 {
                bits[i] = bit;
            }
            max >>= 1;
            i += 1;
        }
        Ok(Word { bits, value: sum as u32 })
    }
}

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
    0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
    0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
    0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
];

const IV: [u32; 8] = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];

/// A word the gadget adds up only when it is next read (its `Maybe`): the operands, or
/// the sum already allocated.
enum Deferred {
    Sum(Vec<Word>),
    Word(Word),
}

impl Deferred {
    fn compute<CS: ConstraintSystem<Scalar>>(
        self,
        w: &mut Witness<'_, CS>,
        others: &[Word],
    ) -> Result<Word, SynthesisError> {
        match self {
            Self::Word(word) => Ok(word),
            Self::Sum(mut operands) => {
                operands.extend_from_slice(others);
                w.addmany(&operands)
            }
        }
    }
}

impl<CS: ConstraintSystem<Scalar>> Witness<'_, CS> {
    /// `sha256_compression_function` of one 512-bit block.
    fn compress(&mut self, block: &[Bit], current: &[Word; 8]) -> Result<[Word; 8], SynthesisError> {
        let mut w: Vec<Word> = block.chunks(32).map(Word::from_bits_be).collect();
        for i in 16..64 {
            let s0 = self.xor_word(&w[i - 15].rotr(7), &w[i - 15].rotr(18))?;
            let s0 = self.xor_word(&s0, &w[i - 15].shr(3))?;
            let s1 = self.xor_word(&w[i - 2].rotr(17), &w[i - 2].rotr(19))?;
            let s1 = self.xor_word(&s1, &w[i - 2].shr(10))?;
            let next = self.addmany(&[w[i - 16], s0, w[i - 7], s1])?;
            w.push(next);
        }

        let mut a = Deferred::Word(current[0]);
        let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *current;
        let mut e = Deferred::Word(current[4]);
        for (i, &k) in ROUND_CONSTANTS.iter().enumerate() {
            let new_e = e.compute(self, &[])?;
            let s1 = self.xor_word(&new_e.rotr(6), &new_e.rotr(11))?;
            let s1 = self.xor_word(&s1, &new_e.rotr(25))?;
            let ch = self.bitwise([&new_e, &f, &g], Self::ch)?;
            let temp1 = [h, s1, ch, Word::constant(k), w[i]];

            let new_a = a.compute(self, &[])?;
            let s0 = self.xor_word(&new_a.rotr(2), &new_a.rotr(13))?;
            let s0 = self.xor_word(&s0, &new_a.rotr(22))?;
            let maj = self.bitwise([&new_a, &b, &c], Self::maj)?;

            h = g;
            g = f;
            f = new_e;
            e = Deferred::Sum(temp1.iter().copied().chain([d]).collect());
            d = c;
            c = b;
            b = new_a;
            a = Deferred::Sum(temp1.iter().copied().chain([s0, maj]).collect());
        }

        Ok([
            a.compute(self, &[current[0]])?,
            self.addmany(&[current[1], b])?,
            self.addmany(&[current[2], c])?,
            self.addmany(&[current[3], d])?,
            e.compute(self, &[current[4]])?,
            self.addmany(&[current[5], f])?,
            self.addmany(&[current[6], g])?,
            self.addmany(&[current[7], h])?,
        ])
    }
}

/// The witness of `bellperson::gadgets::sha256::sha256(cs, input)`: the same variables,
/// in the same order, allocated in `cs`; returns the digest's bits, big-endian as the
/// gadget returns them. For a constraint system that only computes the witness: nothing
/// is enforced.
pub fn sha256<CS: ConstraintSystem<Scalar>>(cs: &mut CS, input: &[Bit]) -> Result<Vec<Bit>, SynthesisError> {
    assert!(input.len() % 8 == 0, "SHA-256 takes whole bytes");
    let mut padded = input.to_vec();
    let length = padded.len() as u64;
    padded.push(Bit::Const(true));
    while (padded.len() + 64) % 512 != 0 {
        padded.push(Bit::Const(false));
    }
    padded.extend((0..64).rev().map(|i| Bit::Const((length >> i) & 1 == 1)));

    let mut witness = Witness { cs };
    let mut current = IV.map(Word::constant);
    for block in padded.chunks(512) {
        current = witness.compress(block, &current)?;
    }
    Ok(current.iter().flat_map(|word| word.bits.iter().rev().copied()).collect())
}

#[cfg(test)]
mod tests {
    use bellpepper_core::boolean::AllocatedBit;
    use bellperson::gadgets::sha256::sha256 as gadget;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::allocations::Allocations;

    /// `bytes` bytes of input bits: constants, variables and negated variables at random.
    fn input(cs: &mut Allocations, rng: &mut ChaCha8Rng, bytes: usize) -> Vec<Boolean> {
        (0..bytes * 8)
            .map(|_| {
                let value = rng.gen::<bool>();
                match rng.gen_range(0..3) {
                    0 => Boolean::Constant(value),
                    1 => Boolean::Is(AllocatedBit::alloc(&mut *cs, Some(value)).unwrap()),
                    _ => Boolean::Is(AllocatedBit::alloc(&mut *cs, Some(!value)).unwrap()).not(),
                }
            })
            .collect()
    }

    #[test]
    fn allocates_what_the_gadget_allocates() {
        let mut rng = ChaCha8Rng::seed_from_u64(19);
        // Empty, one block, the padding's own block, several blocks; all constant and all variable.
        for (bytes, kinds) in
            [(0, None), (3, None), (55, None), (56, None), (64, None), (130, None), (64, Some(0)), (64, Some(1))]
        {
            let mut cs = Allocations::new(true);
            let mut bits = input(&mut cs, &mut rng, bytes);
            if let Some(kind) = kinds {
                for bit in &mut bits {
                    let value = bit.get_value().unwrap();
                    *bit = if kind == 0 {
                        Boolean::Constant(value)
                    } else {
                        Boolean::Is(AllocatedBit::alloc(&mut cs, Some(value)).unwrap())
                    };
                }
            }
            let before = cs.aux.len();
            let mut ours = cs.clone();
            let digest = gadget(&mut cs, &bits).unwrap();
            let native = sha256(&mut ours, &bits.iter().map(|b| Bit::of(b).unwrap()).collect::<Vec<_>>()).unwrap();
            assert_eq!(ours.aux.len(), cs.aux.len(), "{bytes} bytes: allocation count");
            if let Some(i) = (before..cs.aux.len()).find(|&i| ours.aux[i] != cs.aux[i]) {
                panic!("{bytes} bytes: allocation {} of {} differs", i - before, cs.aux.len() - before);
            }
            let expected: Vec<Bit> = digest.iter().map(|b| Bit::of(b).unwrap()).collect();
            assert_eq!(native, expected, "{bytes} bytes: digest bits");
        }
    }
}
