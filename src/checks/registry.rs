//! Which deciders each check has, and where they are: the one list of checks by
//! [`CheckId`]. A check is decided live (from the evidence gathered from the cluster,
//! or the evidence `kopf-audit lint` builds from manifests: one engine, two sources), from
//! the source (the operator's Python and its settings), or both; a check with both is
//! one module (`checks/<area>/<name>.rs`) whose [`Wording`] builds the finding of each.
//! Lint runs the source deciders from here, and so does [`super::run_area`] the live ones
//! of an area whose evidence was gathered; what the deciders of an area share (logs read,
//! objects sampled) is a helper of the area's module that each calls. The RBAC checks
//! are decided together inside their area's own `check` ([`Deciders::InArea`]).

use super::events::{
    duplicates, logging_flood, post_failures, posting_level, silent_failures, steady_state_spam,
    truncated,
};
use super::persistence::{
    annotation_size, default_finalizer, diffbase_annotation, orphaned_finalizers,
    patch_inconsistencies, progress_annotations, status_schema, stuck_finalizer,
};
use super::runtime::{self, handler_loop};
use super::source::{
    SourceFinding, blocking_call, daemon_ignores_stop, handler_kwargs, index_worker_limit,
    module_logger, no_resume, posting_flood, settings_outside_startup, silent_failure,
    sync_daemon_pool, syntax_error, timer_posting, unfiltered_builtin, watch_timeouts,
};
use super::workload::{
    cpu_limit, cpu_request, crash_loop, debug_logging, default_service_account, grace_period,
    liveness, memory_limit, memory_request, no_scope_flag, not_kopf, oom_killed, rollout_overlap,
    standalone_replicas, webhook_blast_radius,
};
use super::{LiveDecider, LiveInput, Raised, Wording};
use crate::catalog::{Area, CheckId};
use crate::model::source::{Handler, SourceFacts};

/// A decider from the source: every finding of its check in the facts.
pub(crate) type SourceDecider = fn(&SourceFacts) -> Vec<SourceFinding>;

/// Which deciders a check has.
#[derive(Clone, Copy)]
pub(crate) enum Deciders {
    /// Live only: [`super::run_area`] runs it on the evidence of its area.
    Live(LiveDecider),
    /// From the source only.
    Source(SourceDecider),
    /// Both, in the check's own module, with the wording they share.
    Both {
        /// The live decider.
        live: LiveDecider,
        /// The source decider.
        source: SourceDecider,
        /// The message's advice and the fix, whichever decided.
        #[cfg_attr(
            not(test),
            expect(dead_code, reason = "the deciders use it; the tests check them by it")
        )]
        wording: &'static Wording,
    },
    /// Live, but decided inside its area's own `check` function, not from here: the
    /// RBAC checks, whose permission needs are built in `model/needs.rs` and judged
    /// together.
    InArea,
}

impl Deciders {
    /// The decider from the source, if the check has one.
    pub(crate) fn source(self) -> Option<SourceDecider> {
        match self {
            Deciders::Live(_) | Deciders::InArea => None,
            Deciders::Source(d) | Deciders::Both { source: d, .. } => Some(d),
        }
    }

    /// The live decider the area runner calls, if the check has one here (not one its
    /// area's `check` runs).
    pub(crate) fn live(self) -> Option<LiveDecider> {
        match self {
            Deciders::Live(d) | Deciders::Both { live: d, .. } => Some(d),
            Deciders::Source(_) | Deciders::InArea => None,
        }
    }
}

/// One check: its deciders and the file that holds them.
pub(crate) struct Entry {
    /// The check.
    pub(crate) check: CheckId,
    /// The file (from the repository's root) that holds its deciders.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "where a check lives is for its readers and tests")
    )]
    pub(crate) module: &'static str,
    /// Its deciders.
    pub(crate) deciders: Deciders,
}

/// A source decider that looks at one handler at a time.
fn per_handler(
    facts: &SourceFacts,
    decide: fn(&Handler) -> Option<SourceFinding>,
) -> Vec<SourceFinding> {
    facts.handlers.iter().filter_map(decide).collect()
}

/// Every check, in catalogue order but for `source.unfiltered-builtin`, which comes with
/// the other per-handler checks, as lint has always listed it.
pub(crate) const ENTRIES: &[Entry] = &[
    Entry {
        check: CheckId::WorkloadNotKopf,
        module: "src/checks/workload/not_kopf.rs",
        deciders: Deciders::Live(not_kopf::live),
    },
    Entry {
        check: CheckId::WorkloadMemoryRequest,
        module: "src/checks/workload/memory_request.rs",
        deciders: Deciders::Live(memory_request::live),
    },
    Entry {
        check: CheckId::WorkloadMemoryLimit,
        module: "src/checks/workload/memory_limit.rs",
        deciders: Deciders::Live(memory_limit::live),
    },
    Entry {
        check: CheckId::WorkloadCpuLimit,
        module: "src/checks/workload/cpu_limit.rs",
        deciders: Deciders::Live(cpu_limit::live),
    },
    Entry {
        check: CheckId::WorkloadCpuRequest,
        module: "src/checks/workload/cpu_request.rs",
        deciders: Deciders::Live(cpu_request::live),
    },
    Entry {
        check: CheckId::WorkloadOomKilled,
        module: "src/checks/workload/oom_killed.rs",
        deciders: Deciders::Live(oom_killed::live),
    },
    Entry {
        check: CheckId::WorkloadCrashLoop,
        module: "src/checks/workload/crash_loop.rs",
        deciders: Deciders::Live(crash_loop::live),
    },
    Entry {
        check: CheckId::WorkloadStandaloneReplicas,
        module: "src/checks/workload/standalone_replicas.rs",
        deciders: Deciders::Live(standalone_replicas::live),
    },
    Entry {
        check: CheckId::WorkloadLiveness,
        module: "src/checks/workload/liveness.rs",
        deciders: Deciders::Live(liveness::live),
    },
    Entry {
        check: CheckId::WorkloadDefaultServiceAccount,
        module: "src/checks/workload/default_service_account.rs",
        deciders: Deciders::Live(default_service_account::live),
    },
    Entry {
        check: CheckId::WorkloadNoScopeFlag,
        module: "src/checks/workload/no_scope_flag.rs",
        deciders: Deciders::Live(no_scope_flag::live),
    },
    Entry {
        check: CheckId::WorkloadRolloutOverlap,
        module: "src/checks/workload/rollout_overlap.rs",
        deciders: Deciders::Live(rollout_overlap::live),
    },
    Entry {
        check: CheckId::WorkloadDebugLogging,
        module: "src/checks/workload/debug_logging.rs",
        deciders: Deciders::Live(debug_logging::live),
    },
    Entry {
        check: CheckId::WorkloadWebhookBlastRadius,
        module: "src/checks/workload/webhook_blast_radius.rs",
        deciders: Deciders::Live(webhook_blast_radius::live),
    },
    Entry {
        check: CheckId::WorkloadGracePeriod,
        module: "src/checks/workload/grace_period.rs",
        deciders: Deciders::Live(grace_period::live),
    },
    Entry {
        check: CheckId::RbacCrdScan,
        module: "src/model/needs.rs",
        deciders: Deciders::InArea,
    },
    Entry {
        check: CheckId::RbacEvents,
        module: "src/model/needs.rs",
        deciders: Deciders::InArea,
    },
    Entry {
        check: CheckId::RbacEventsPatch,
        module: "src/model/needs.rs",
        deciders: Deciders::InArea,
    },
    Entry {
        check: CheckId::RbacNamespaces,
        module: "src/model/needs.rs",
        deciders: Deciders::InArea,
    },
    Entry {
        check: CheckId::RbacPeering,
        module: "src/model/needs.rs",
        deciders: Deciders::InArea,
    },
    Entry {
        check: CheckId::RbacHandledResources,
        module: "src/model/needs.rs",
        deciders: Deciders::InArea,
    },
    Entry {
        check: CheckId::RbacOverPrivileged,
        module: "src/checks/rbac.rs",
        deciders: Deciders::InArea,
    },
    Entry {
        check: CheckId::EventsSilentFailures,
        module: "src/checks/events/silent_failures.rs",
        deciders: Deciders::Live(silent_failures::live),
    },
    Entry {
        check: CheckId::EventsLoggingFlood,
        module: "src/checks/events/logging_flood.rs",
        deciders: Deciders::Live(logging_flood::live),
    },
    Entry {
        check: CheckId::EventsSteadyStateSpam,
        module: "src/checks/events/steady_state_spam.rs",
        deciders: Deciders::Live(steady_state_spam::live),
    },
    Entry {
        check: CheckId::EventsPostFailures,
        module: "src/checks/events/post_failures.rs",
        deciders: Deciders::Live(post_failures::live),
    },
    Entry {
        check: CheckId::EventsDuplicates,
        module: "src/checks/events/duplicates.rs",
        deciders: Deciders::Live(duplicates::live),
    },
    Entry {
        check: CheckId::EventsTruncated,
        module: "src/checks/events/truncated.rs",
        deciders: Deciders::Live(truncated::live),
    },
    Entry {
        check: CheckId::EventsPostingLevel,
        module: "src/checks/events/posting_level.rs",
        deciders: Deciders::Live(posting_level::live),
    },
    Entry {
        check: CheckId::PersistenceProgressAnnotations,
        module: "src/checks/persistence/progress_annotations.rs",
        deciders: Deciders::Both {
            live: progress_annotations::live,
            source: |f| progress_annotations::source(f).into_iter().collect(),
            wording: &progress_annotations::WORDING,
        },
    },
    Entry {
        check: CheckId::PersistenceDiffbaseAnnotation,
        module: "src/checks/persistence/diffbase_annotation.rs",
        deciders: Deciders::Both {
            live: diffbase_annotation::live,
            source: |f| diffbase_annotation::source(f).into_iter().collect(),
            wording: &diffbase_annotation::WORDING,
        },
    },
    Entry {
        check: CheckId::PersistenceDefaultFinalizer,
        module: "src/checks/persistence/default_finalizer.rs",
        deciders: Deciders::Both {
            live: default_finalizer::live,
            source: |f| default_finalizer::source(f).into_iter().collect(),
            wording: &default_finalizer::WORDING,
        },
    },
    Entry {
        check: CheckId::PersistenceStatusSchema,
        module: "src/checks/persistence/status_schema.rs",
        deciders: Deciders::Live(status_schema::live),
    },
    Entry {
        check: CheckId::PersistencePatchInconsistencies,
        module: "src/checks/persistence/patch_inconsistencies.rs",
        deciders: Deciders::Live(patch_inconsistencies::live),
    },
    Entry {
        check: CheckId::PersistenceStuckFinalizer,
        module: "src/checks/persistence/stuck_finalizer.rs",
        deciders: Deciders::Live(stuck_finalizer::live),
    },
    Entry {
        check: CheckId::PersistenceAnnotationSize,
        module: "src/checks/persistence/annotation_size.rs",
        deciders: Deciders::Live(annotation_size::live),
    },
    Entry {
        check: CheckId::PersistenceOrphanedFinalizers,
        module: "src/checks/persistence/orphaned_finalizers.rs",
        deciders: Deciders::Live(orphaned_finalizers::live),
    },
    Entry {
        check: CheckId::RuntimeHandlerFailures,
        module: "src/checks/runtime/handler_failures.rs",
        deciders: Deciders::Live(runtime::handler_failures::live),
    },
    Entry {
        check: CheckId::RuntimeStartupForbidden,
        module: "src/checks/runtime/startup_forbidden.rs",
        deciders: Deciders::Live(runtime::startup_forbidden::live),
    },
    Entry {
        check: CheckId::RuntimePermissionDegraded,
        module: "src/checks/runtime/permission_degraded.rs",
        deciders: Deciders::Live(runtime::permission_degraded::live),
    },
    Entry {
        check: CheckId::RuntimePeeringConflict,
        module: "src/checks/runtime/peering_conflict.rs",
        deciders: Deciders::Live(runtime::peering_conflict::live),
    },
    Entry {
        check: CheckId::RuntimeUnresolvedResources,
        module: "src/checks/runtime/unresolved_resources.rs",
        deciders: Deciders::Live(runtime::unresolved_resources::live),
    },
    Entry {
        check: CheckId::RuntimeThrottling,
        module: "src/checks/runtime/throttling.rs",
        deciders: Deciders::Live(runtime::throttling::live),
    },
    Entry {
        check: CheckId::RuntimeOrphanedDaemons,
        module: "src/checks/runtime/orphaned_daemons.rs",
        deciders: Deciders::Live(runtime::orphaned_daemons::live),
    },
    Entry {
        check: CheckId::RuntimeUnparsedLogs,
        module: "src/checks/runtime/unparsed_logs.rs",
        deciders: Deciders::Live(runtime::unparsed_logs::live),
    },
    Entry {
        check: CheckId::RuntimeNotHandling,
        module: "src/checks/runtime/not_handling.rs",
        deciders: Deciders::Live(runtime::not_handling::live),
    },
    Entry {
        check: CheckId::RuntimeDeadWatcher,
        module: "src/checks/runtime/dead_watcher.rs",
        deciders: Deciders::Live(runtime::dead_watcher::live),
    },
    Entry {
        check: CheckId::RuntimeKopfVersion,
        module: "src/checks/runtime/kopf_version.rs",
        deciders: Deciders::Live(runtime::kopf_version::live),
    },
    Entry {
        check: CheckId::RuntimeForeignPeer,
        module: "src/checks/runtime/foreign_peer.rs",
        deciders: Deciders::Live(runtime::foreign_peer::live),
    },
    Entry {
        check: CheckId::RuntimeRateLimited,
        module: "src/checks/runtime/rate_limited.rs",
        deciders: Deciders::Live(runtime::rate_limited::live),
    },
    Entry {
        check: CheckId::RuntimeHandlerLoop,
        module: "src/checks/runtime/handler_loop.rs",
        deciders: Deciders::Both {
            live: handler_loop::live,
            source: |f| per_handler(f, handler_loop::source),
            wording: &handler_loop::WORDING,
        },
    },
    Entry {
        check: CheckId::RuntimeStartupStalled,
        module: "src/checks/runtime/startup_stalled.rs",
        deciders: Deciders::Live(runtime::startup_stalled::live),
    },
    Entry {
        check: CheckId::RuntimeOperatorConflict,
        module: "src/checks/runtime/operator_conflict.rs",
        deciders: Deciders::Live(runtime::operator_conflict::live),
    },
    Entry {
        check: CheckId::RuntimeCredentialsLost,
        module: "src/checks/runtime/credentials_lost.rs",
        deciders: Deciders::Live(runtime::credentials_lost::live),
    },
    Entry {
        check: CheckId::RuntimeApiTlsFailure,
        module: "src/checks/runtime/api_tls_failure.rs",
        deciders: Deciders::Live(runtime::api_tls_failure::live),
    },
    Entry {
        check: CheckId::RuntimeThreadExhaustion,
        module: "src/checks/runtime/thread_exhaustion.rs",
        deciders: Deciders::Live(runtime::thread_exhaustion::live),
    },
    Entry {
        check: CheckId::RuntimeWebhookCertificate,
        module: "src/checks/runtime/webhook_certificate.rs",
        deciders: Deciders::Live(runtime::webhook_certificate::live),
    },
    Entry {
        check: CheckId::SourceSyntaxError,
        module: "src/checks/source/syntax_error.rs",
        deciders: Deciders::Source(syntax_error::source),
    },
    Entry {
        check: CheckId::SourceHandlerKwargs,
        module: "src/checks/source/handler_kwargs.rs",
        deciders: Deciders::Source(|f| per_handler(f, handler_kwargs::source)),
    },
    Entry {
        check: CheckId::SourceBlockingCall,
        module: "src/checks/source/blocking_call.rs",
        deciders: Deciders::Source(blocking_call::source),
    },
    Entry {
        check: CheckId::SourceModuleLogger,
        module: "src/checks/source/module_logger.rs",
        deciders: Deciders::Source(module_logger::source),
    },
    Entry {
        check: CheckId::SourceUnfilteredBuiltin,
        module: "src/checks/source/unfiltered_builtin.rs",
        deciders: Deciders::Source(|f| per_handler(f, unfiltered_builtin::source)),
    },
    Entry {
        check: CheckId::SourceSettingsOutsideStartup,
        module: "src/checks/source/settings_outside_startup.rs",
        deciders: Deciders::Source(settings_outside_startup::source),
    },
    Entry {
        check: CheckId::SourcePostingFlood,
        module: "src/checks/source/posting_flood.rs",
        deciders: Deciders::Source(|f| posting_flood::source(f).into_iter().collect()),
    },
    Entry {
        check: CheckId::SourceSilentFailure,
        module: "src/checks/source/silent_failure.rs",
        deciders: Deciders::Source(silent_failure::source),
    },
    Entry {
        check: CheckId::SourceTimerPosting,
        module: "src/checks/source/timer_posting.rs",
        deciders: Deciders::Source(|f| per_handler(f, timer_posting::source)),
    },
    Entry {
        check: CheckId::SourceIndexWorkerLimit,
        module: "src/checks/source/index_worker_limit.rs",
        deciders: Deciders::Source(|f| index_worker_limit::source(f).into_iter().collect()),
    },
    Entry {
        check: CheckId::SourceNoResume,
        module: "src/checks/source/no_resume.rs",
        deciders: Deciders::Source(no_resume::source),
    },
    Entry {
        check: CheckId::SourceSyncDaemonPool,
        module: "src/checks/source/sync_daemon_pool.rs",
        deciders: Deciders::Source(|f| sync_daemon_pool::source(f).into_iter().collect()),
    },
    Entry {
        check: CheckId::SourceDaemonIgnoresStop,
        module: "src/checks/source/daemon_ignores_stop.rs",
        deciders: Deciders::Source(|f| per_handler(f, daemon_ignores_stop::source)),
    },
    Entry {
        check: CheckId::SourceWatchTimeouts,
        module: "src/checks/source/watch_timeouts.rs",
        deciders: Deciders::Source(|f| watch_timeouts::source(f).into_iter().collect()),
    },
];

/// Every finding of the source deciders, in the order of [`ENTRIES`]: what `kopf-audit lint`
/// reports from the Python.
pub(crate) fn source_findings(facts: &SourceFacts) -> Vec<SourceFinding> {
    let mut out = Vec::new();
    for entry in ENTRIES {
        let Some(decide) = entry.deciders.source() else {
            continue;
        };
        let found = decide(facts);
        debug_assert!(
            found.iter().all(|f| f.finding.check == entry.check),
            "a decider of {} raised another check",
            entry.check.as_str()
        );
        out.extend(found);
    }
    out
}

/// Every finding of the live deciders of `area`'s checks listed here, in the order of
/// [`ENTRIES`]; the checks its own `check` decides ([`Deciders::InArea`]) are not among
/// them.
pub(crate) fn live_findings(area: Area, input: &LiveInput<'_>) -> Vec<Raised> {
    let mut out = Vec::new();
    for entry in ENTRIES.iter().filter(|e| e.check.area() == area) {
        let Some(decide) = entry.deciders.live() else {
            continue;
        };
        let found = decide(input);
        debug_assert!(
            found.iter().all(|r| r.finding.check == entry.check),
            "a decider of {} raised another check",
            entry.check.as_str()
        );
        out.extend(found);
    }
    out
}

#[cfg(test)]
mod tests;
