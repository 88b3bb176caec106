//! The circuit catalog: named, sized circuits, each with a deterministic witness.
//!
//! A circuit is named by a spec string `name:parameter`; the parameter may be written as
//! a number or as a power of two (`chain:2^16`):
//! - `chain:N`: N squaring constraints `x_{i+1} = x_i^2 + i`, one public output;
//! - `sha256-merkle:DEPTH`: a Merkle inclusion proof with SHA-256, in the constraints of
//!   bellpepper's gadget (Boolean-heavy, like PoRep's tree_d), about 45,800 constraints a level;
//! - `poseidon-merkle:DEPTH`: a binary Merkle path with neptune's Poseidon gadget (like
//!   tree_c / tree_r), about 300 constraints a level.
//!
//! Together they reach from about 2^10 to 2^24 constraints and beyond. With the
//! `filecoin` feature (on by default) the catalog also has Filecoin's circuits
//! (`porep`, `winning-post`, `window-post`, `snap` at `2KiB`, `8MiB`, `512MiB`, `32GiB`, `64GiB`;
//! see `bellhop-filecoin`), whose witness is partition `seed` of a job's input.

mod chain;
mod poseidon_merkle;
mod sha256;
mod sha256_merkle;
mod shape;

use std::{fmt, str::FromStr};

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

pub use chain::Chain;
pub use poseidon_merkle::PoseidonMerkle;
pub use sha256_merkle::Sha256Merkle;
pub use shape::CircuitShape;

/// A circuit of the catalog and its size parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CircuitSpec {
    /// A Filecoin circuit, e.g. `window-post:2KiB`.
    #[cfg(feature = "filecoin")]
    Filecoin(bellhop_filecoin::FilecoinSpec),
    /// `chain:N`.
    Chain {
        /// Squaring constraints.
        length: usize,
    },
    /// `sha256-merkle:DEPTH`.
    Sha256Merkle {
        /// Tree levels on the path.
        depth: usize,
    },
    /// `poseidon-merkle:DEPTH`.
    PoseidonMerkle {
        /// Tree levels on the path.
        depth: usize,
    },
}

/// A spec string that names no catalog circuit.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    /// Not `name:parameter`.
    #[error("circuit `{0}` is not of the form name:parameter (e.g. chain:65536, sha256-merkle:4, poseidon-merkle:20)")]
    Form(String),
    /// An unknown name.
    #[error(
        "unknown circuit `{0}`; the catalog has chain:N, sha256-merkle:DEPTH and poseidon-merkle:DEPTH{FILECOIN_NAMES}"
    )]
    Name(String),
    /// A parameter that is not a number or out of range.
    #[error("bad parameter `{value}` for {name}: {why}")]
    Parameter {
        /// The circuit name.
        name: String,
        /// The parameter as given.
        value: String,
        /// What is wrong and what is allowed.
        why: String,
    },
}

#[cfg(feature = "filecoin")]
const FILECOIN_NAMES: &str =
    ", and Filecoin's porep, winning-post, window-post and snap (e.g. porep:2KiB), and synthetic-porep for benchmarks";
#[cfg(not(feature = "filecoin"))]
const FILECOIN_NAMES: &str = "";

/// What the jobs of one input read ([`CircuitSpec::prepare`]).
#[derive(Debug, Default)]
pub struct PreparedInput {
    /// One input per partition; `None`: every partition reads the whole input.
    pub partitions: Option<Vec<Vec<u8>>>,
    /// Where the job's proof is not its partitions' proofs concatenated: what
    /// [`CircuitSpec::job_proof`] makes it with (a NonInteractivePoRep's public data).
    pub aggregation: Option<Vec<u8>>,
}

/// Why a circuit's witness could not be built.
#[derive(Debug, thiserror::Error)]
pub enum WitnessError {
    /// A synthetic circuit was given input.
    #[error("{0} takes no input (only Filecoin circuits read one)")]
    Input(CircuitSpec),
    /// A Filecoin circuit's input is wrong.
    #[cfg(feature = "filecoin")]
    #[error(transparent)]
    Filecoin(#[from] bellhop_filecoin::FilecoinError),
    /// The circuit failed to synthesize.
    #[error("{0} failed to synthesize: {1}")]
    Synthesis(CircuitSpec, SynthesisError),
    /// A circuit whose proofs prove nothing, asked for where proofs are returned.
    #[error(
        "{0} is for benchmarks only (`bellhop bench`): its input is synthetic, so its proofs prove nothing and \
         are never returned"
    )]
    BenchmarkOnly(CircuitSpec),
}

impl CircuitSpec {
    /// The catalog's names, as specs take them.
    pub const NAMES: [&'static str; 3] = ["chain", "sha256-merkle", "poseidon-merkle"];

    /// The circuit with its witness and its public inputs (without the leading constant
    /// one): derived from `seed` for the synthetic circuits, which take no `input`; for a
    /// Filecoin circuit, partition `seed` of `input`.
    pub fn instance(&self, seed: u64, input: &[u8]) -> Result<Instance, WitnessError> {
        let rng = &mut ChaCha8Rng::seed_from_u64(seed);
        if !input.is_empty() && !self.reads_input() {
            return Err(WitnessError::Input(*self));
        }
        let (circuit, public_inputs) = match *self {
            #[cfg(feature = "filecoin")]
            CircuitSpec::Filecoin(spec) => {
                let bellhop_filecoin::Instance { circuit, public_inputs } = spec.instance(input, seed as usize)?;
                (CatalogCircuit::Filecoin(Box::new(circuit)), public_inputs)
            }
            CircuitSpec::Chain { length } => {
                let c = Chain::random(length, rng);
                let inputs = c.public_inputs();
                (CatalogCircuit::Chain(c), inputs)
            }
            CircuitSpec::Sha256Merkle { depth } => {
                let c = Sha256Merkle::random(depth, rng);
                let inputs = c.public_inputs();
                (CatalogCircuit::Sha256Merkle(c), inputs)
            }
            CircuitSpec::PoseidonMerkle { depth } => {
                let c = PoseidonMerkle::random(depth, rng);
                let inputs = c.public_inputs();
                (CatalogCircuit::PoseidonMerkle(c), inputs)
            }
        };
        Ok(Instance { circuit, public_inputs })
    }

    /// The public inputs (without the leading constant one) that a proof of job `seed`,
    /// `input` must be for, computed apart from any synthesis: the synthetic circuits'
    /// from their witness, a Filecoin circuit's from its input's public data as
    /// filecoin-proofs' verifier computes them.
    pub fn public_inputs(&self, seed: u64, input: &[u8]) -> Result<Vec<Scalar>, WitnessError> {
        match *self {
            #[cfg(feature = "filecoin")]
            CircuitSpec::Filecoin(spec) => Ok(spec.public_inputs(input, seed as usize)?),
            _ => Ok(self.instance(seed, input)?.public_inputs),
        }
    }

    /// The circuit of a synthetic spec, with the witness of seed `seed`.
    pub fn synthetic(&self, seed: u64) -> Result<Instance, WitnessError> {
        self.instance(seed, &[])
    }

    /// How many proofs `input` makes: a Filecoin circuit's partitions; one for a
    /// synthetic circuit, which takes no input.
    pub fn partitions(&self, input: &[u8]) -> Result<usize, WitnessError> {
        match self {
            #[cfg(feature = "filecoin")]
            CircuitSpec::Filecoin(spec) => Ok(spec.partitions(input)?),
            _ if input.is_empty() => Ok(1),
            _ => Err(WitnessError::Input(*self)),
        }
    }

    /// What the jobs that prove `input` read: one input per partition where a partition
    /// needs less than the whole (a Filecoin PoRep's partitions each get their own vanilla
    /// proofs, all checked here once for the job), and what the job's proof is made with
    /// besides its partitions' proofs (a NonInteractivePoRep's aggregation).
    #[cfg_attr(not(feature = "filecoin"), allow(unused_variables))]
    pub fn prepare(&self, input: &[u8]) -> Result<PreparedInput, WitnessError> {
        match self {
            #[cfg(feature = "filecoin")]
            CircuitSpec::Filecoin(spec) => {
                let bellhop_filecoin::JobInputs { partitions, aggregation } = spec.prepare(input)?;
                Ok(PreparedInput { partitions, aggregation })
            }
            _ => Ok(PreparedInput::default()),
        }
    }

    /// A job's proof from its partitions' proofs (`proofs`, in partition order): those
    /// proofs, or with `aggregation` (from [`prepare`](Self::prepare)) the aggregate
    /// filecoin-proofs makes of them and accepts.
    pub fn job_proof(&self, aggregation: Option<&[u8]>, proofs: Vec<u8>) -> Result<Vec<u8>, WitnessError> {
        match (self, aggregation) {
            #[cfg(feature = "filecoin")]
            (CircuitSpec::Filecoin(spec), Some(_)) => Ok(spec.job_proof(aggregation, proofs)?),
            _ => Ok(proofs),
        }
    }

    /// Whether only benchmarks take it: its input is synthetic and its proofs prove
    /// nothing (`synthetic-porep`).
    pub fn benchmark_only(&self) -> bool {
        match self {
            #[cfg(feature = "filecoin")]
            CircuitSpec::Filecoin(spec) => spec.kind == bellhop_filecoin::Kind::SyntheticPorep,
            _ => false,
        }
    }

    /// Fails for a [`benchmark_only`](Self::benchmark_only) circuit: for the paths that
    /// return proofs.
    pub fn refuse_benchmark_only(&self) -> Result<(), WitnessError> {
        if self.benchmark_only() {
            return Err(WitnessError::BenchmarkOnly(*self));
        }
        Ok(())
    }

    /// Whether its witness comes from a job's input (Filecoin circuits).
    pub fn reads_input(&self) -> bool {
        match self {
            #[cfg(feature = "filecoin")]
            CircuitSpec::Filecoin(_) => true,
            _ => false,
        }
    }

    /// The circuit for parameter generation (any witness, or none).
    pub fn setup_circuit(&self) -> Result<CatalogCircuit, WitnessError> {
        match self {
            #[cfg(feature = "filecoin")]
            CircuitSpec::Filecoin(spec) => Ok(CatalogCircuit::Filecoin(Box::new(spec.blank_circuit()?))),
            _ => Ok(self.synthetic(0)?.circuit),
        }
    }

    /// The shape of its constraint system, counted from [`setup_circuit`](Self::setup_circuit).
    pub fn shape(&self) -> Result<CircuitShape, WitnessError> {
        let circuit = self.setup_circuit()?;
        CircuitShape::of(circuit).map_err(|error| WitnessError::Synthesis(*self, error))
    }

    /// The name of its parameter file: `bellhop-<spec>.params`, or for a Filecoin
    /// circuit `v28-<identifier>.params` as filecoin-proofs names it (not for
    /// `synthetic-porep`, whose parameters are synthetic too: they must not be mistaken
    /// for the published ones).
    pub fn params_file_name(&self) -> Result<String, WitnessError> {
        match self {
            #[cfg(feature = "filecoin")]
            CircuitSpec::Filecoin(spec) if !self.benchmark_only() => {
                Ok(format!("v28-{}.params", spec.param_identifier()?))
            }
            _ => {
                let safe: String = self
                    .to_string()
                    .chars()
                    .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' })
                    .collect();
                Ok(format!("bellhop-{safe}.params"))
            }
        }
    }

    fn parse_parameter(name: &str, value: &str, max: usize) -> Result<usize, SpecError> {
        let bad = |why: String| SpecError::Parameter { name: name.into(), value: value.into(), why };
        let n = match value.split_once('^') {
            Some(("2", exp)) => {
                let exp: u32 = exp.parse().map_err(|_| bad("the exponent of 2^k must be a number".into()))?;
                1usize.checked_shl(exp).filter(|_| exp < usize::BITS).ok_or_else(|| bad("too large".into()))?
            }
            Some(_) => return Err(bad("only powers of two may be written with ^ (2^k)".into())),
            None => value.parse().map_err(|_| bad("not a number".into()))?,
        };
        if n == 0 || n > max {
            return Err(bad(format!("must be between 1 and {max}")));
        }
        Ok(n)
    }
}

impl FromStr for CircuitSpec {
    type Err = SpecError;

    fn from_str(s: &str) -> Result<Self, SpecError> {
        let (name, value) = s.split_once(':').ok_or_else(|| SpecError::Form(s.into()))?;
        #[cfg(feature = "filecoin")]
        if let Some(spec) = bellhop_filecoin::FilecoinSpec::parse(name, value) {
            return spec.map(Self::Filecoin).map_err(|why| SpecError::Parameter {
                name: name.into(),
                value: value.into(),
                why,
            });
        }
        match name {
            "chain" => Ok(Self::Chain { length: Self::parse_parameter(name, value, 1 << 28)? }),
            "sha256-merkle" => Ok(Self::Sha256Merkle { depth: Self::parse_parameter(name, value, 4096)? }),
            "poseidon-merkle" => Ok(Self::PoseidonMerkle { depth: Self::parse_parameter(name, value, 1 << 20)? }),
            _ => Err(SpecError::Name(name.into())),
        }
    }
}

impl fmt::Display for CircuitSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(feature = "filecoin")]
            Self::Filecoin(spec) => write!(f, "{spec}"),
            Self::Chain { length } => write!(f, "chain:{length}"),
            Self::Sha256Merkle { depth } => write!(f, "sha256-merkle:{depth}"),
            Self::PoseidonMerkle { depth } => write!(f, "poseidon-merkle:{depth}"),
        }
    }
}

/// A circuit with its witness, and the public inputs a verifier checks it against.
pub struct Instance {
    /// The circuit.
    pub circuit: CatalogCircuit,
    /// The public inputs, without the leading constant one.
    pub public_inputs: Vec<Scalar>,
}

/// Any circuit of the catalog.
pub enum CatalogCircuit {
    /// See [`Chain`].
    Chain(Chain),
    /// See [`Sha256Merkle`].
    Sha256Merkle(Sha256Merkle),
    /// See [`PoseidonMerkle`].
    PoseidonMerkle(PoseidonMerkle),
    /// A Filecoin circuit (see `bellhop-filecoin`).
    #[cfg(feature = "filecoin")]
    Filecoin(Box<bellhop_filecoin::FilecoinCircuit>),
}

impl Circuit<Scalar> for CatalogCircuit {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        match self {
            CatalogCircuit::Chain(c) => c.synthesize(cs),
            CatalogCircuit::Sha256Merkle(c) => c.synthesize(cs),
            CatalogCircuit::PoseidonMerkle(c) => c.synthesize(cs),
            #[cfg(feature = "filecoin")]
            CatalogCircuit::Filecoin(c) => c.synthesize(cs),
        }
    }
}

/// A circuit cut where its synthesis allows: `head`, then pieces that each begin with the
/// head again and go on with one part that reads only the head's variables and its own.
/// Synthesizing the head and then each piece's part, in order, is synthesizing the whole
/// circuit, constraint for constraint; so the pieces can be synthesized apart, on many
/// threads, and joined (`bellhop_synthesis_kit::synthesize_in_parts`).
pub struct Parts {
    /// What every piece begins with.
    pub head: CatalogCircuit,
    /// The head and one part each, in the whole circuit's order.
    pub pieces: Vec<CatalogCircuit>,
}

impl CatalogCircuit {
    /// The circuit cut into [`Parts`] where its synthesis allows (PoRep C2's challenges,
    /// PoSt's sectors); else itself.
    pub fn into_parts(self) -> Result<Parts, Self> {
        match self {
            #[cfg(feature = "filecoin")]
            CatalogCircuit::Filecoin(circuit) => match circuit.into_parts() {
                Ok((head, pieces)) => Ok(Parts {
                    head: CatalogCircuit::Filecoin(Box::new(head)),
                    pieces: pieces.into_iter().map(|piece| CatalogCircuit::Filecoin(Box::new(piece))).collect(),
                }),
                Err(whole) => Err(CatalogCircuit::Filecoin(whole)),
            },
            other => Err(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::test_cs::TestConstraintSystem;

    #[test]
    fn specs_parse_and_print() {
        assert_eq!("chain:2^16".parse(), Ok(CircuitSpec::Chain { length: 65536 }));
        assert_eq!("sha256-merkle:3".parse(), Ok(CircuitSpec::Sha256Merkle { depth: 3 }));
        assert_eq!(CircuitSpec::PoseidonMerkle { depth: 20 }.to_string(), "poseidon-merkle:20");
        for spec in ["chain:1000", "sha256-merkle:2", "poseidon-merkle:7"] {
            assert_eq!(spec.parse::<CircuitSpec>().unwrap().to_string(), spec);
        }
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        let e = |s: &str| s.parse::<CircuitSpec>().unwrap_err().to_string();
        assert!(e("chain").contains("name:parameter"));
        assert!(e("chian:5").contains("unknown circuit `chian`"));
        assert!(e("chain:abc").contains("not a number"));
        assert!(e("chain:0").contains("between 1 and"));
        assert!(e("chain:3^4").contains("powers of two"));
    }

    /// Every catalog circuit is satisfied by its witness, with the public inputs it reports.
    #[test]
    fn witnesses_satisfy_their_circuits() {
        for (spec, constraints) in
            [("chain:1000", 1000), ("sha256-merkle:2", 2 * 45_800), ("poseidon-merkle:5", 5 * 300)]
        {
            let instance = spec.parse::<CircuitSpec>().unwrap().synthetic(7).unwrap();
            let mut cs = TestConstraintSystem::<Scalar>::new();
            instance.circuit.synthesize(&mut cs).unwrap();
            assert!(cs.is_satisfied(), "{spec}: {:?}", cs.which_is_unsatisfied());
            assert!(cs.verify(&instance.public_inputs), "{spec}: public inputs");
            let n = cs.num_constraints();
            assert!(n * 10 >= constraints * 8 && n * 10 <= constraints * 12, "{spec}: {n} constraints");
        }
    }

    #[test]
    fn seeds_change_witnesses_not_shapes() {
        for spec in ["chain:100", "sha256-merkle:1", "poseidon-merkle:3"] {
            let spec: CircuitSpec = spec.parse().unwrap();
            // The shape: constraint and variable counts, and every constraint's terms.
            let shape = |seed| {
                let mut cs = TestConstraintSystem::<Scalar>::new();
                spec.synthetic(seed).unwrap().circuit.synthesize(&mut cs).unwrap();
                (cs.num_constraints(), cs.num_inputs(), cs.hash(), cs.scalar_inputs())
            };
            let (one, two) = (shape(1), shape(2));
            assert_eq!((one.0, one.1, &one.2), (two.0, two.1, &two.2), "{spec}: seeds must not change the shape");
            assert_ne!(one.3, two.3, "{spec}: seeds change the witness");
            assert_eq!(spec.synthetic(1).unwrap().public_inputs, spec.synthetic(1).unwrap().public_inputs);
        }
    }
}
