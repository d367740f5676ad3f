//! The event mapping: each rlmesh 0.1.0 hook event as one
//! `rlrec.events.v1.Event` (kind and header; the forwarder adds the time,
//! the sequence and the run nonce).
//!
//! Every field of every 0.1.0 event struct is carried:
//! - `route.lane` → `RuntimeEnvContext.lane` (4), absent when `None`;
//! - space specs, values and meta maps are rlmesh's own prost types
//!   (`extern_path`), so they are encoded exactly as the runtime has them,
//!   with no conversion (a `MetaValue` null, field 8 of rlmesh's
//!   `meta.proto`, is kept on the wire);
//! - `raw_action` / `raw_observation` are sent only when they differ from
//!   `action` / `observation` (the proto says so: no doubled bytes); a raw
//!   payload that is `None` while the transformed one is `Some` cannot be
//!   told apart from "equal" on the wire and is left out as well;
//! - `StepCompleted.predict_ms` / `step_ms` are always set (0.1.0 always
//!   reports them), `EpisodeCompleted`'s when the runtime sent them.

use prost::bytes::Bytes;
use rlmesh_runtime::rlmesh_proto::spaces::v1::SpaceValue;
use rlmesh_runtime::telemetry::{Horizon, Kind as MetricKind};
use rlmesh_runtime::{
    ActionReceivedEvent, AdvisorySeverity, EnvConnectedEvent, EpisodeCompletedEvent,
    EpisodeStartedEvent, Leg, LogEvent, LogLevel, ModelConnectedEvent, ObservationEmittedEvent,
    RelayAdvisoryEvent, RuntimeEnvContext, SessionEndedEvent, SessionFailedEvent,
    SessionStartedEvent, StepCompletedEvent, TelemetrySnapshotEvent,
};

use crate::proto::events as ev;
use ev::event::Kind;

/// The event header and kind, without time, sequence or run nonce.
fn event(session_id: String, route: RuntimeEnvContext, kind: Kind) -> ev::Event {
    ev::Event {
        session_id,
        route: Some(ev::RuntimeEnvContext {
            env_id: route.env_id,
            env_component_id: route.env_component_id,
            model_component_id: route.model_component_id,
            lane: route.lane,
        }),
        kind: Some(kind),
        ..Default::default()
    }
}

fn value(leaves: Option<Vec<Bytes>>) -> Option<SpaceValue> {
    leaves.map(|leaves| SpaceValue { leaves })
}

/// The raw payload, only when it differs from the transformed one.
fn raw_value(raw: Option<Vec<Bytes>>, transformed: &Option<Vec<Bytes>>) -> Option<SpaceValue> {
    match (&raw, transformed) {
        (Some(r), Some(t)) if r == t => None,
        (None, _) => None,
        _ => value(raw),
    }
}

pub fn env_connected(e: EnvConnectedEvent) -> ev::Event {
    event(
        e.session_id,
        e.route,
        Kind::EnvConnected(ev::EnvConnected { env_id: e.env_id }),
    )
}

pub fn model_connected(e: ModelConnectedEvent) -> ev::Event {
    event(
        e.session_id,
        e.route,
        Kind::ModelConnected(ev::ModelConnected {}),
    )
}

pub fn session_started(e: SessionStartedEvent) -> ev::Event {
    event(
        e.session_id,
        e.route,
        Kind::SessionStarted(ev::SessionStarted { env_id: e.env_id }),
    )
}

pub fn session_ended(e: SessionEndedEvent) -> ev::Event {
    event(
        e.session_id,
        e.route,
        Kind::SessionEnded(ev::SessionEnded {
            reason: e.reason,
            total_steps: e.total_steps,
            total_episodes: e.total_episodes,
        }),
    )
}

pub fn session_failed(e: SessionFailedEvent) -> ev::Event {
    event(
        e.session_id,
        e.route,
        Kind::SessionFailed(ev::SessionFailed { reason: e.reason }),
    )
}

/// The wire value of a log level (never 0).
pub fn log_level(level: LogLevel) -> ev::LogLevel {
    match level {
        LogLevel::Debug => ev::LogLevel::Debug,
        LogLevel::Info => ev::LogLevel::Info,
        LogLevel::Warn => ev::LogLevel::Warn,
        LogLevel::Error => ev::LogLevel::Error,
    }
}

pub fn log(e: LogEvent) -> ev::Event {
    event(
        e.session_id,
        e.route,
        Kind::Log(ev::Log {
            level: log_level(e.level) as i32,
            message: e.message,
            source: e.source,
        }),
    )
}

pub fn episode_started(e: EpisodeStartedEvent) -> ev::Event {
    event(
        e.session_id,
        e.route,
        Kind::EpisodeStarted(ev::EpisodeStarted {
            episode_id: e.episode_id,
            episode_record_id: e.episode_record_id,
            episode_index: e.episode_index,
            env_index: e.env_index,
            started_from_auto_reset: e.started_from_auto_reset,
            seed: e.seed,
            trial_index: e.trial_index,
        }),
    )
}

pub fn episode_completed(e: EpisodeCompletedEvent) -> ev::Event {
    event(
        e.session_id,
        e.route,
        Kind::EpisodeCompleted(ev::EpisodeCompleted {
            episode_id: e.episode_id,
            episode_record_id: e.episode_record_id,
            episode_index: e.episode_index,
            env_index: e.env_index,
            step_count: e.step_count,
            cumulative_reward: e.cumulative_reward,
            terminated: e.terminated,
            truncated: e.truncated,
            duration_ms: e.duration_ms,
            final_info: e.final_info,
            success: e.success,
            seed: e.seed,
            trial_index: e.trial_index,
            predict_ms: e.predict_ms,
            step_ms: e.step_ms,
        }),
    )
}

pub fn action_received(e: ActionReceivedEvent) -> ev::Event {
    let raw_action = raw_value(e.raw_action, &e.action);
    event(
        e.session_id,
        e.route,
        Kind::ActionReceived(ev::ActionReceived {
            episode_id: e.episode_id,
            episode_record_id: e.episode_record_id,
            episode_ids: e.episode_ids,
            episode_record_ids: e.episode_record_ids,
            step: e.step,
            env_index: e.env_index,
            action_space: Some((*e.action_space).clone()),
            action: value(e.action),
            raw_action,
        }),
    )
}

pub fn step_completed(e: StepCompletedEvent) -> ev::Event {
    event(
        e.session_id,
        e.route,
        Kind::StepCompleted(ev::StepCompleted {
            episode_id: e.episode_id,
            episode_record_id: e.episode_record_id,
            step: e.step,
            env_index: e.env_index,
            rewards: e.rewards,
            infos: e.infos,
            terminated: e.terminated,
            truncated: e.truncated,
            autoreset_roll: e.autoreset_roll,
            predict_ms: Some(e.predict_ms),
            step_ms: Some(e.step_ms),
        }),
    )
}

pub fn observation_emitted(e: ObservationEmittedEvent) -> ev::Event {
    let raw_observation = raw_value(e.raw_observation, &e.observation);
    event(
        e.session_id,
        e.route,
        Kind::ObservationEmitted(ev::ObservationEmitted {
            episode_id: e.episode_id,
            episode_record_id: e.episode_record_id,
            episode_ids: e.episode_ids,
            episode_record_ids: e.episode_record_ids,
            step: e.step,
            env_index: e.env_index,
            is_reset: e.is_reset,
            num_envs: e.num_envs,
            observation_space: Some((*e.observation_space).clone()),
            observation: value(e.observation),
            raw_observation,
            infos: e.infos,
        }),
    )
}

pub fn telemetry(e: TelemetrySnapshotEvent) -> ev::Event {
    let horizon = match e.snapshot.horizon {
        Horizon::Window => ev::TelemetryHorizon::Window,
        Horizon::Session => ev::TelemetryHorizon::Session,
    };
    let rows = e
        .snapshot
        .rows
        .into_iter()
        .map(|r| ev::TelemetryRow {
            op: r.source.op.to_string(),
            component: r.source.component.to_string(),
            metric: r.metric.name.to_string(),
            kind: match r.metric.kind {
                MetricKind::Duration => ev::MetricKind::DurationMs,
                MetricKind::Bytes => ev::MetricKind::Bytes,
                MetricKind::Count => ev::MetricKind::Count,
            } as i32,
            count: r.count,
            avg: r.avg,
            p50: r.p50,
            p95: r.p95,
            p99: r.p99,
        })
        .collect();
    event(
        e.session_id,
        e.route,
        Kind::TelemetrySnapshot(ev::TelemetrySnapshot {
            horizon: horizon as i32,
            rows,
        }),
    )
}

pub fn relay_advisory(e: RelayAdvisoryEvent) -> ev::Event {
    let leg = match e.leg {
        Leg::EnvToModel => ev::RelayLeg::EnvToModel,
        Leg::ModelToEnv => ev::RelayLeg::ModelToEnv,
    };
    let severity = match e.advisory.severity {
        AdvisorySeverity::Info => ev::AdvisorySeverity::Info,
        AdvisorySeverity::Caution => ev::AdvisorySeverity::Caution,
    };
    event(
        e.session_id,
        e.route,
        Kind::RelayAdvisory(ev::RelayAdvisory {
            leg: leg as i32,
            severity: severity as i32,
            message: e.advisory.message,
        }),
    )
}
