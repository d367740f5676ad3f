//! The event mapping, field by field: each rlmesh 0.1.0 event with every
//! field set to a distinct value, against the rlrec.events.v1 message
//! written out by hand.

use std::sync::Arc;

use ev::event::Kind;
use prost::bytes::Bytes;
use rlmesh_runtime::rlmesh_proto::spaces::v1::{
    DataType, MetaMap, MetaValue, SpaceSpec, SpaceValue, meta_value,
};
use rlmesh_runtime::telemetry::{Horizon, Kind as MetricKind, Metric, Row, Snapshot, Source};
use rlmesh_runtime::*;
use rlrec_hooks::convert;
use rlrec_hooks::proto::events as ev;

fn route(lane: Option<u32>) -> RuntimeEnvContext {
    RuntimeEnvContext {
        env_id: "env-1".into(),
        env_component_id: "env/c".into(),
        model_component_id: "model/c".into(),
        lane,
    }
}

fn wire(kind: Kind, lane: Option<u32>) -> ev::Event {
    ev::Event {
        session_id: "s-1".into(),
        route: Some(ev::RuntimeEnvContext {
            env_id: "env-1".into(),
            env_component_id: "env/c".into(),
            model_component_id: "model/c".into(),
            lane,
        }),
        kind: Some(kind),
        ..Default::default()
    }
}

fn info(k: &str) -> MetaMap {
    MetaMap {
        entries: [(
            k.to_string(),
            MetaValue {
                kind: Some(meta_value::Kind::Null(Default::default())),
            },
        )]
        .into(),
    }
}

fn space() -> SpaceSpec {
    SpaceSpec {
        shape: vec![3],
        dtype: DataType::Uint8 as i32,
        spec: None,
    }
}

fn leaves(b: &'static [u8]) -> Vec<Bytes> {
    vec![Bytes::from_static(b), Bytes::from_static(b"second")]
}

fn action(raw: Option<Vec<Bytes>>) -> ActionReceivedEvent {
    ActionReceivedEvent {
        session_id: "s-1".into(),
        route: route(Some(2)),
        episode_id: "e".into(),
        episode_record_id: "ep-000003".into(),
        episode_ids: vec!["e".into(), "".into()],
        episode_record_ids: vec!["ep-000003".into(), "".into()],
        step: 9,
        env_index: 2,
        action_space: Arc::new(space()),
        action: Some(leaves(b"act")),
        raw_action: raw,
    }
}

fn action_wire(raw: Option<Vec<Bytes>>) -> ev::Event {
    wire(
        Kind::ActionReceived(ev::ActionReceived {
            episode_id: "e".into(),
            episode_record_id: "ep-000003".into(),
            episode_ids: vec!["e".into(), "".into()],
            episode_record_ids: vec!["ep-000003".into(), "".into()],
            step: 9,
            env_index: 2,
            action_space: Some(space()),
            action: Some(SpaceValue {
                leaves: leaves(b"act"),
            }),
            raw_action: raw.map(|leaves| SpaceValue { leaves }),
        }),
        Some(2),
    )
}

fn observation(raw: Option<Vec<Bytes>>) -> ObservationEmittedEvent {
    ObservationEmittedEvent {
        session_id: "s-1".into(),
        route: route(None),
        episode_id: "e".into(),
        episode_record_id: "ep-000003".into(),
        episode_ids: vec!["e".into()],
        episode_record_ids: vec!["ep-000003".into()],
        step: 4,
        env_index: 0,
        is_reset: true,
        num_envs: 1,
        observation_space: Arc::new(space()),
        observation: Some(leaves(b"obs")),
        raw_observation: raw,
        infos: Some(info("reset")),
    }
}

fn observation_wire(raw: Option<Vec<Bytes>>) -> ev::Event {
    wire(
        Kind::ObservationEmitted(ev::ObservationEmitted {
            episode_id: "e".into(),
            episode_record_id: "ep-000003".into(),
            episode_ids: vec!["e".into()],
            episode_record_ids: vec!["ep-000003".into()],
            step: 4,
            env_index: 0,
            is_reset: true,
            num_envs: 1,
            observation_space: Some(space()),
            observation: Some(SpaceValue {
                leaves: leaves(b"obs"),
            }),
            raw_observation: raw.map(|leaves| SpaceValue { leaves }),
            infos: Some(info("reset")),
        }),
        None,
    )
}

#[test]
fn every_event_maps_field_by_field() {
    let cases: Vec<(&str, ev::Event, ev::Event)> = vec![
        (
            "env connected",
            convert::env_connected(EnvConnectedEvent {
                session_id: "s-1".into(),
                route: route(None),
                env_id: "env-x".into(),
            }),
            wire(
                Kind::EnvConnected(ev::EnvConnected {
                    env_id: "env-x".into(),
                }),
                None,
            ),
        ),
        (
            "model connected",
            convert::model_connected(ModelConnectedEvent {
                session_id: "s-1".into(),
                route: route(None),
            }),
            wire(Kind::ModelConnected(ev::ModelConnected {}), None),
        ),
        (
            "session started",
            convert::session_started(SessionStartedEvent {
                session_id: "s-1".into(),
                route: route(None),
                env_id: "env-1".into(),
            }),
            wire(
                Kind::SessionStarted(ev::SessionStarted {
                    env_id: "env-1".into(),
                }),
                None,
            ),
        ),
        (
            "session ended",
            convert::session_ended(SessionEndedEvent {
                session_id: "s-1".into(),
                route: route(None),
                reason: "done".into(),
                total_steps: 11,
                total_episodes: 3,
            }),
            wire(
                Kind::SessionEnded(ev::SessionEnded {
                    reason: "done".into(),
                    total_steps: 11,
                    total_episodes: 3,
                }),
                None,
            ),
        ),
        (
            "session failed",
            convert::session_failed(SessionFailedEvent {
                session_id: "s-1".into(),
                route: route(None),
                reason: "boom".into(),
            }),
            wire(
                Kind::SessionFailed(ev::SessionFailed {
                    reason: "boom".into(),
                }),
                None,
            ),
        ),
        (
            "log with lane and source",
            convert::log(LogEvent {
                session_id: "s-1".into(),
                route: route(Some(1)),
                level: LogLevel::Warn,
                message: "m".into(),
                source: Some("runtime".into()),
            }),
            wire(
                Kind::Log(ev::Log {
                    level: ev::LogLevel::Warn as i32,
                    message: "m".into(),
                    source: Some("runtime".into()),
                }),
                Some(1),
            ),
        ),
        (
            "episode started, seed and trial",
            convert::episode_started(EpisodeStartedEvent {
                session_id: "s-1".into(),
                route: route(Some(3)),
                episode_id: "e".into(),
                episode_record_id: "ep-000003".into(),
                episode_index: 3,
                env_index: 3,
                started_from_auto_reset: true,
                seed: Some(-5),
                trial_index: Some(7),
            }),
            wire(
                Kind::EpisodeStarted(ev::EpisodeStarted {
                    episode_id: "e".into(),
                    episode_record_id: "ep-000003".into(),
                    episode_index: 3,
                    env_index: 3,
                    started_from_auto_reset: true,
                    seed: Some(-5),
                    trial_index: Some(7),
                }),
                Some(3),
            ),
        ),
        (
            "episode completed, every 0.1 field",
            convert::episode_completed(EpisodeCompletedEvent {
                session_id: "s-1".into(),
                route: route(None),
                episode_id: "e".into(),
                episode_record_id: "ep-000003".into(),
                episode_index: 3,
                env_index: 0,
                step_count: 12,
                cumulative_reward: 2.5,
                terminated: false,
                truncated: true,
                duration_ms: 40,
                final_info: Some(info("is_success")),
                success: Some(false),
                seed: Some(9),
                trial_index: None,
                predict_ms: Some(1.5),
                step_ms: Some(0.25),
            }),
            wire(
                Kind::EpisodeCompleted(ev::EpisodeCompleted {
                    episode_id: "e".into(),
                    episode_record_id: "ep-000003".into(),
                    episode_index: 3,
                    env_index: 0,
                    step_count: 12,
                    cumulative_reward: 2.5,
                    terminated: false,
                    truncated: true,
                    duration_ms: 40,
                    final_info: Some(info("is_success")),
                    success: Some(false),
                    seed: Some(9),
                    trial_index: None,
                    predict_ms: Some(1.5),
                    step_ms: Some(0.25),
                }),
                None,
            ),
        ),
        (
            "action, raw equal to transformed: left out",
            convert::action_received(action(Some(leaves(b"act")))),
            action_wire(None),
        ),
        (
            "action, raw differs: sent",
            convert::action_received(action(Some(leaves(b"raw")))),
            action_wire(Some(leaves(b"raw"))),
        ),
        (
            "action, no raw",
            convert::action_received(action(None)),
            action_wire(None),
        ),
        (
            "observation, raw equal: left out",
            convert::observation_emitted(observation(Some(leaves(b"obs")))),
            observation_wire(None),
        ),
        (
            "observation, raw differs: sent",
            convert::observation_emitted(observation(Some(leaves(b"env")))),
            observation_wire(Some(leaves(b"env"))),
        ),
        (
            "step completed, per-lane flags and timings",
            convert::step_completed(StepCompletedEvent {
                session_id: "s-1".into(),
                route: route(None),
                episode_id: "e".into(),
                episode_record_id: "ep-000003".into(),
                step: 5,
                env_index: 0,
                rewards: vec![1.0, 0.0],
                infos: None,
                terminated: vec![true, false],
                truncated: vec![false, true],
                autoreset_roll: vec![false, true],
                predict_ms: 0.5,
                step_ms: 0.75,
            }),
            wire(
                Kind::StepCompleted(ev::StepCompleted {
                    episode_id: "e".into(),
                    episode_record_id: "ep-000003".into(),
                    step: 5,
                    env_index: 0,
                    rewards: vec![1.0, 0.0],
                    infos: None,
                    terminated: vec![true, false],
                    truncated: vec![false, true],
                    autoreset_roll: vec![false, true],
                    predict_ms: Some(0.5),
                    step_ms: Some(0.75),
                }),
                None,
            ),
        ),
        (
            "telemetry",
            convert::telemetry(TelemetrySnapshotEvent {
                session_id: "s-1".into(),
                route: route(None),
                snapshot: Snapshot {
                    horizon: Horizon::Session,
                    rows: vec![Row {
                        source: Source {
                            op: "env.step",
                            component: "env",
                        },
                        metric: Metric {
                            name: "rpc.total",
                            kind: MetricKind::Bytes,
                        },
                        count: 4,
                        avg: 1.0,
                        p50: 2.0,
                        p95: 3.0,
                        p99: 4.0,
                    }],
                },
            }),
            wire(
                Kind::TelemetrySnapshot(ev::TelemetrySnapshot {
                    horizon: ev::TelemetryHorizon::Session as i32,
                    rows: vec![ev::TelemetryRow {
                        op: "env.step".into(),
                        component: "env".into(),
                        metric: "rpc.total".into(),
                        kind: ev::MetricKind::Bytes as i32,
                        count: 4,
                        avg: 1.0,
                        p50: 2.0,
                        p95: 3.0,
                        p99: 4.0,
                    }],
                }),
                None,
            ),
        ),
        (
            "relay advisory",
            convert::relay_advisory(RelayAdvisoryEvent {
                session_id: "s-1".into(),
                route: route(None),
                leg: Leg::ModelToEnv,
                advisory: Advisory::caution("converted"),
            }),
            wire(
                Kind::RelayAdvisory(ev::RelayAdvisory {
                    leg: ev::RelayLeg::ModelToEnv as i32,
                    severity: ev::AdvisorySeverity::Caution as i32,
                    message: "converted".into(),
                }),
                None,
            ),
        ),
    ];
    for (name, got, want) in cases {
        assert_eq!(got, want, "{name}");
    }
}
