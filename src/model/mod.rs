//! The model layer: plain data that gather fills and the pure layers read. How a
//! container runs kopf ([`kopf_run`]), the evidence of an audit ([`evidence`]), RBAC
//! facts ([`rbac`]) and what kopf needs of RBAC ([`needs`]), the settings a KopfAudit
//! resolves to ([`settings`]), Kubernetes quantities and Go durations, the bounded,
//! clean text readers see ([`bounded`]) and the names derived from a KopfAudit's
//! ([`names`]). Nothing here performs I/O.

pub(crate) mod bounded;
pub(crate) mod ca_bundle;
pub(crate) mod conflict;
pub(crate) mod diffbase;
pub(crate) mod discovery;
pub(crate) mod duration;
pub(crate) mod evidence;
pub(crate) mod exemption;
pub(crate) mod handled;
pub(crate) mod kopf_marks;
pub(crate) mod kopf_run;
pub(crate) mod labels;
pub(crate) mod names;
pub(crate) mod needs;
pub(crate) mod operators;
pub(crate) mod quantity;
pub(crate) mod rbac;
pub(crate) mod settings;
pub(crate) mod shape;
pub(crate) mod source;
#[cfg(test)]
pub(crate) mod testing;
