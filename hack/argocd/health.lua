-- Argo CD health check for kopfaudit.dev/KopfAudit.
--
-- Install it in argocd-cm (see the README, "Argo CD"):
--   resource.customizations.health.kopfaudit.dev_KopfAudit: |
--     <this file>
--
-- Decisions, first match wins (tested on sample objects: cargo test --manifest-path hack/argocd/Cargo.toml):
--   Suspended    Ready=False, reason Suspended (spec.suspend: true; last results kept)
--   Progressing  no status yet, or status.observedGeneration behind metadata.generation
--   Degraded     Stalled=True (target missing, cross-namespace refused, audit failing)
--   Progressing  Reconciling=True (an audit of this generation is running)
--   Degraded     Compliant=False (findings at warning or above), with its message
--   Healthy      Ready=True and Compliant=True
--   Healthy      Ready=True and Compliant=Unknown: the audit works, but an area could
--                not be decided (the auditor lacks a permission, the target is not
--                kopf); the message says which. Not Degraded: nothing is known wrong.
--   Progressing  anything else (waiting for the first audit)

local hs = { status = "Progressing", message = "Waiting for the first audit" }

local function condition(conditions, type_)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == type_ then
      return c
    end
  end
  return nil
end

local function is(c, status)
  return c ~= nil and c.status == status
end

local function message(c, fallback)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  return fallback
end

local status = obj.status
if status == nil or status.conditions == nil or #status.conditions == 0 then
  return hs
end
local conditions = status.conditions
local ready = condition(conditions, "Ready")
local stalled = condition(conditions, "Stalled")
local reconciling = condition(conditions, "Reconciling")
local compliant = condition(conditions, "Compliant")

if is(ready, "False") and ready.reason == "Suspended" then
  hs.status = "Suspended"
  hs.message = message(ready, "spec.suspend is true: no audits run")
  return hs
end

local generation = obj.metadata ~= nil and obj.metadata.generation or nil
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the audit of generation " .. tostring(generation)
  return hs
end

if is(stalled, "True") then
  hs.status = "Degraded"
  hs.message = message(stalled, "The audit cannot run")
  return hs
end

if is(reconciling, "True") then
  hs.status = "Progressing"
  hs.message = message(reconciling, "The audit is running")
  return hs
end

if is(compliant, "False") then
  hs.status = "Degraded"
  local summary = status.summary
  local counts = ""
  if summary ~= nil then
    counts = " (" .. tostring(summary.errors or 0) .. " errors, " .. tostring(summary.warnings or 0) .. " warnings)"
  end
  hs.message = message(compliant, "Not compliant") .. counts
  return hs
end

if is(ready, "True") and is(compliant, "True") then
  hs.status = "Healthy"
  hs.message = message(compliant, "Compliant")
  return hs
end

if is(ready, "True") and is(compliant, "Unknown") then
  hs.status = "Healthy"
  hs.message = "Audited; compliance unknown: " .. message(compliant, "an area could not be decided")
  return hs
end

hs.message = message(ready, hs.message)
return hs
