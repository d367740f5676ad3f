//! A small env and model for the real rlmesh driver, written for these
//! tests: an observation is two float32s per lane (lane, step in episode),
//! an action one int64 per lane (Discrete(2)). The env can serve lanes
//! (`subset_step`), roll under NEXT_STEP, never end (for caps), or fail.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use prost::bytes::Bytes;
use rlmesh_runtime::rlmesh_proto::core::v1::{AutoresetMode, EnvContract, EnvSpec};
use rlmesh_runtime::rlmesh_proto::env::v1::{
    EpisodeMetadata, ResetRequest, ResetResponse, StepRequest, StepResponse,
};
use rlmesh_runtime::rlmesh_proto::model::v1::{PredictRequest, PredictResponse};
use rlmesh_runtime::rlmesh_proto::spaces::v1::{
    BoxSpec, DataType, DiscreteSpec, MetaMap, MetaValue, SpaceSpec, SpaceValue, box_spec,
    meta_value, space_spec,
};
use rlmesh_runtime::{
    EndpointPhases, RuntimeEnv, RuntimeEnvReset, RuntimeEnvStep, RuntimeError, RuntimeModel,
    RuntimeModelPrediction, RuntimeSessionSpec,
};

pub fn obs_space() -> SpaceSpec {
    SpaceSpec {
        shape: vec![2],
        dtype: DataType::Float32 as i32,
        spec: Some(space_spec::Spec::Box(BoxSpec {
            bounds: Some(box_spec::Bounds::Unbounded(true)),
        })),
    }
}

pub fn act_space() -> SpaceSpec {
    SpaceSpec {
        shape: vec![],
        dtype: DataType::Int64 as i32,
        spec: Some(space_spec::Spec::Discrete(DiscreteSpec { n: 2, start: 0 })),
    }
}

fn meta(entries: &[(&str, meta_value::Kind)]) -> MetaMap {
    MetaMap {
        entries: entries
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    MetaValue {
                        kind: Some(v.clone()),
                    },
                )
            })
            .collect(),
    }
}

fn obs(lanes: &[(u32, usize)]) -> SpaceValue {
    let mut b = Vec::with_capacity(lanes.len() * 8);
    for (lane, step) in lanes {
        b.extend_from_slice(&(*lane as f32).to_le_bytes());
        b.extend_from_slice(&(*step as f32).to_le_bytes());
    }
    SpaceValue {
        leaves: vec![Bytes::from(b)],
    }
}

/// How the toy env behaves.
#[derive(Clone, Debug)]
pub struct EnvPlan {
    /// Episode length per lane (0: never ends by itself).
    pub lengths: Vec<usize>,
    pub next_step: bool,
    pub lane_served: bool,
    /// The env's n-th step call (from 1, over all lanes) fails.
    pub fail_at_call: Option<usize>,
    /// Per step call, a pause (lane-served: lane i waits (i+1) times it,
    /// so lanes interleave).
    pub step_delay: Duration,
}

#[derive(Default)]
struct EnvState {
    step: Vec<usize>,
    ids: Vec<String>,
    seeds: Vec<Option<i64>>,
    pending_roll: Vec<bool>,
    calls: usize,
}

#[derive(Clone)]
pub struct ToyEnv {
    plan: EnvPlan,
    state: Arc<Mutex<EnvState>>,
}

#[derive(Debug)]
pub struct Failure;

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the toy env failed its step on purpose")
    }
}
impl std::error::Error for Failure {}

impl ToyEnv {
    pub fn new(plan: EnvPlan) -> ToyEnv {
        let n = plan.lengths.len();
        ToyEnv {
            plan,
            state: Arc::new(Mutex::new(EnvState {
                step: vec![0; n],
                ids: vec![String::new(); n],
                seeds: vec![None; n],
                pending_roll: vec![false; n],
                calls: 0,
            })),
        }
    }

    fn lanes_of(&self, indices: &[u32]) -> Vec<usize> {
        if indices.is_empty() {
            (0..self.plan.lengths.len()).collect()
        } else {
            indices.iter().map(|i| *i as usize).collect()
        }
    }
}

#[async_trait]
impl RuntimeEnv for ToyEnv {
    async fn reset(&mut self, req: ResetRequest) -> Result<RuntimeEnvReset, RuntimeError> {
        let lanes = self.lanes_of(&req.env_indices);
        let mut st = self.state.lock().expect("env state");
        for (k, lane) in lanes.iter().enumerate() {
            st.step[*lane] = 0;
            st.pending_roll[*lane] = false;
            st.ids[*lane] = req.episode_ids.get(k).cloned().unwrap_or_default();
            st.seeds[*lane] = req.seeds.get(k).copied();
        }
        let o: Vec<(u32, usize)> = lanes.iter().map(|l| (*l as u32, 0)).collect();
        Ok(RuntimeEnvReset {
            response: ResetResponse {
                observation: Some(obs(&o)),
                infos: Some(meta(&[("phase", meta_value::Kind::Text("reset".into()))])),
            },
            endpoint_total_ns: None,
            phases: EndpointPhases::default(),
        })
    }

    async fn step(&mut self, req: StepRequest) -> Result<RuntimeEnvStep, RuntimeError> {
        let lanes = self.lanes_of(&req.env_indices);
        let call = {
            let mut st = self.state.lock().expect("env state");
            st.calls += 1;
            st.calls
        };
        if self.plan.fail_at_call == Some(call) {
            return Err(RuntimeError::env_rpc("step", call as i64, Failure));
        }
        if !self.plan.step_delay.is_zero() {
            let factor = if self.plan.lane_served {
                lanes[0] as u32 + 1
            } else {
                1
            };
            tokio::time::sleep(self.plan.step_delay * factor).await;
        }
        let mut st = self.state.lock().expect("env state");
        let mut rewards = Vec::new();
        let mut term = Vec::new();
        let mut o = Vec::new();
        let mut completed = Vec::new();
        let mut rolled = false;
        for (k, &lane) in lanes.iter().enumerate() {
            if st.pending_roll[lane] {
                rolled = true;
                st.pending_roll[lane] = false;
                st.step[lane] = 0;
                st.ids[lane] = req.episode_ids.get(k).cloned().unwrap_or_default();
                rewards.push(0.0);
                term.push(0u8);
                o.push((lane as u32, 0));
                continue;
            }
            st.step[lane] += 1;
            let s = st.step[lane];
            let len = self.plan.lengths[lane];
            let done = len > 0 && s >= len;
            rewards.push(0.5 * s as f64);
            term.push(u8::from(done));
            o.push((lane as u32, s));
            if done {
                completed.push(EpisodeMetadata {
                    episode_id: st.ids[lane].clone(),
                    seed: st.seeds[lane],
                    env_index: lane as u32,
                    step_count: s as i64,
                    cumulative_reward: (1..=s).map(|i| 0.5 * i as f64).sum(),
                    terminated: true,
                    final_info: Some(meta(&[
                        ("is_success", meta_value::Kind::Bool(lane % 2 == 0)),
                        ("lane", meta_value::Kind::Integer(lane as i64)),
                    ])),
                    ..Default::default()
                });
                if self.plan.next_step {
                    st.pending_roll[lane] = true;
                }
            }
        }
        let n = lanes.len();
        Ok(RuntimeEnvStep {
            response: StepResponse {
                observation: Some(obs(&o)),
                rewards,
                terminated_mask: term,
                truncated_mask: vec![0; n],
                infos: Some(meta(&[(
                    "phase",
                    meta_value::Kind::Text(if rolled { "roll" } else { "step" }.into()),
                )])),
                completed_episodes: completed,
                env_indices: if self.plan.lane_served {
                    lanes.iter().map(|l| *l as u32).collect()
                } else {
                    vec![]
                },
            },
            endpoint_total_ns: None,
            phases: EndpointPhases::default(),
        })
    }

    async fn close(&mut self, _timeout: Duration) -> Result<(), String> {
        Ok(())
    }
}

/// Acts 1 on odd steps, 0 on even ones, per lane.
#[derive(Clone, Default)]
pub struct ToyModel;

#[async_trait]
impl RuntimeModel for ToyModel {
    async fn predict(&self, req: PredictRequest) -> Result<RuntimeModelPrediction, RuntimeError> {
        let lanes = req.episode_info.len().max(1);
        let step = req.step.unwrap_or(0);
        let mut b = Vec::with_capacity(lanes * 8);
        for lane in 0..lanes {
            b.extend_from_slice(&((step + lane as i64) % 2).to_le_bytes());
        }
        Ok(RuntimeModelPrediction {
            response: PredictResponse {
                context: req.context,
                actions: vec![SpaceValue {
                    leaves: vec![Bytes::from(b)],
                }],
            },
            endpoint_total_ns: None,
            phases: EndpointPhases::default(),
            group_size: None,
        })
    }
}

/// A session spec for the toy env.
pub fn spec(name: &str, lanes: usize, next_step: bool, lane_served: bool) -> RuntimeSessionSpec {
    RuntimeSessionSpec {
        session_id: format!("sess-{name}-{}", std::process::id()),
        env_id: format!("env-{name}"),
        env_component_id: "env/toy".to_string(),
        model_component_id: "model/toy".to_string(),
        workflow_edition: rlmesh_runtime::rlmesh_proto::Edition::E2026_06,
        env_contract: EnvContract {
            spec: Some(EnvSpec {
                observation_space: Some(obs_space()),
                action_space: Some(act_space()),
                ..Default::default()
            }),
            num_envs: lanes as u32,
            autoreset_mode: if next_step {
                AutoresetMode::NextStep
            } else {
                AutoresetMode::Disabled
            } as i32,
            ..Default::default()
        },
        num_envs: lanes,
        episode_seeds: Vec::new(),
        base_seed: Some(7),
        max_episodes: Some(lanes as u64 * 2),
        trial_index_base: None,
        max_episode_steps: None,
        max_episode_seconds: None,
        close_env_on_end: true,
        subset_step: lane_served,
        limits: Default::default(),
        env_ceiling: None,
        model_ceiling: None,
    }
}
