//! The engine with a device that fails: the test plugin `failing-device` is the CPU backend
//! on two devices, of which device 1 fails every call. The engine marks it down, proves
//! its partition on device 0 and says so in its status and metrics.

use std::time::Duration;

use bellhop_circuits::CircuitSpec;
use bellhop_engine::{Engine, JobRequest, Outcome, Waited};
use bellhop_host::{config::Config, params};
use bellhop_tests::{build_dir, built_library};
use bellperson::groth16::generate_random_parameters;
use blstrs::Bls12;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

#[tokio::test]
async fn a_failing_device_is_marked_down_and_its_work_done_on_another() {
    let dir = tempfile::tempdir().unwrap();
    let spec: CircuitSpec = "chain:2048".parse().unwrap();
    let generated =
        generate_random_parameters::<Bls12, _, _>(spec.setup_circuit().unwrap(), &mut ChaCha20Rng::seed_from_u64(2))
            .unwrap();
    params::write(&generated, &dir.path().join(spec.params_file_name().unwrap())).unwrap();
    let mut config = Config::default();
    config.backend.plugin = built_library("fixture_failing_device").display().to_string();
    config.params.dir = dir.path().to_path_buf();
    config.daemon.state_dir = dir.path().join("state");
    let engine = Engine::start(&config, &build_dir()).unwrap();
    assert_eq!(engine.status().devices.len(), 2, "every device the backend describes");
    let jobs: Vec<String> = (0..4)
        .map(|_| {
            engine.submit(JobRequest { partitions: 2, ..JobRequest::new(spec, Vec::new()).unwrap() }).unwrap().job_id
        })
        .collect();
    for id in &jobs {
        let waited = engine.wait(id, Some(Duration::from_secs(300))).await.unwrap();
        assert!(matches!(waited, Waited::Done(Outcome::Completed { .. })), "{id}: {waited:?}");
    }
    let status = engine.status();
    let down = status.devices[1].down.as_deref().expect("device 1 is down");
    assert!(down.contains("device 1 failed on purpose"), "{down}");
    assert!(status.devices[0].down.is_none());
    assert_eq!((status.devices[0].proved, status.devices[1].proved), (8, 0));
    assert!(engine.metrics().contains(r#"bellhop_device_up{device="1"} 0"#));
    // With device 0 the only one up, the engine names it for new jobs.
    let next = engine.submit(JobRequest::new(spec, Vec::new()).unwrap()).unwrap();
    assert_eq!(next.assigned_device, Some(0));
}
