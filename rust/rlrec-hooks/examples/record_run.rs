//! Records one local rlmesh run into `rlrec serve`:
//!
//!     rlrec serve -o data &                       # listens on 127.0.0.1:7465
//!     cargo run --ignore-rust-version --example record_run -- http://127.0.0.1:7465
//!     rlrec inspect data
//!
//! The env counts down from 5 and the model always acts 0; a real program
//! hands RuntimeDriver rlmesh's own env and model clients instead.
#![allow(clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use prost::bytes::Bytes;
use rlmesh_runtime::rlmesh_proto::core::v1::{EnvContract, EnvSpec};
use rlmesh_runtime::rlmesh_proto::env::v1::*;
use rlmesh_runtime::rlmesh_proto::model::v1::{PredictRequest, PredictResponse};
use rlmesh_runtime::rlmesh_proto::spaces::v1::{
    BoxSpec, DataType, DiscreteSpec, SpaceSpec, SpaceValue, box_spec, space_spec,
};
use rlmesh_runtime::*;
use rlrec_hooks::{Config, Forwarder};

fn value(bytes: Vec<u8>) -> Option<SpaceValue> {
    Some(SpaceValue {
        leaves: vec![Bytes::from(bytes)],
    })
}

#[derive(Clone, Default)]
struct Countdown {
    left: i64,
    id: String,
}

#[async_trait]
impl RuntimeEnv for Countdown {
    async fn reset(&mut self, r: ResetRequest) -> Result<RuntimeEnvReset, RuntimeError> {
        (self.left, self.id) = (5, r.episode_ids.first().cloned().unwrap_or_default());
        let response = ResetResponse {
            observation: value(5f32.to_le_bytes().to_vec()),
            infos: None,
        };
        Ok(RuntimeEnvReset {
            response,
            endpoint_total_ns: None,
            phases: Default::default(),
        })
    }

    async fn step(&mut self, _: StepRequest) -> Result<RuntimeEnvStep, RuntimeError> {
        self.left -= 1;
        let done = self.left == 0;
        let completed = done.then(|| EpisodeMetadata {
            episode_id: self.id.clone(),
            step_count: 5,
            cumulative_reward: 5.0,
            terminated: true,
            ..Default::default()
        });
        let response = StepResponse {
            observation: value((self.left as f32).to_le_bytes().to_vec()),
            rewards: vec![1.0],
            terminated_mask: vec![u8::from(done)],
            truncated_mask: vec![0],
            completed_episodes: completed.into_iter().collect(),
            ..Default::default()
        };
        Ok(RuntimeEnvStep {
            response,
            endpoint_total_ns: None,
            phases: Default::default(),
        })
    }
}

struct Zero;

#[async_trait]
impl RuntimeModel for Zero {
    async fn predict(&self, r: PredictRequest) -> Result<RuntimeModelPrediction, RuntimeError> {
        let actions = vec![SpaceValue {
            leaves: vec![Bytes::from(0i64.to_le_bytes().to_vec())],
        }];
        let response = PredictResponse {
            context: r.context,
            actions,
        };
        Ok(RuntimeModelPrediction {
            response,
            endpoint_total_ns: None,
            phases: Default::default(),
            group_size: None,
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "http://127.0.0.1:7465".into());
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_nanos();
    let spec = RuntimeSessionSpec {
        session_id: format!("countdown-{now}"),
        env_id: format!("run-{now}"),
        env_component_id: "env/countdown".into(),
        model_component_id: "model/zero".into(),
        workflow_edition: rlmesh_runtime::rlmesh_proto::Edition::E2026_06,
        env_contract: EnvContract {
            spec: Some(EnvSpec {
                observation_space: Some(SpaceSpec {
                    shape: vec![1],
                    dtype: DataType::Float32 as i32,
                    spec: Some(space_spec::Spec::Box(BoxSpec {
                        bounds: Some(box_spec::Bounds::Unbounded(true)),
                    })),
                }),
                action_space: Some(SpaceSpec {
                    dtype: DataType::Int64 as i32,
                    spec: Some(space_spec::Spec::Discrete(DiscreteSpec { n: 2, start: 0 })),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            num_envs: 1,
            ..Default::default()
        },
        num_envs: 1,
        episode_seeds: vec![],
        base_seed: Some(1),
        max_episodes: Some(3),
        trial_index_base: None,
        max_episode_steps: None,
        max_episode_seconds: None,
        close_env_on_end: true,
        subset_step: false,
        limits: Default::default(),
        env_ceiling: None,
        model_ceiling: None,
    };
    // Events are spooled under ./rlrec-spool before each hook returns; a
    // forwarder started there later resends what serve did not acknowledge.
    let hooks = Arc::new(Forwarder::start(Config::new(server, "rlrec-spool"))?);
    let report = RuntimeDriver::new(spec, Countdown::default(), Zero, hooks.clone())
        .run()
        .await?;
    let stats = hooks
        .close(Instant::now() + Duration::from_secs(30))
        .await?;
    println!(
        "{} episodes, {} events recorded ({} dropped)",
        report.total_episodes, stats.delivered, stats.dropped
    );
    Ok(())
}
