//go:build tools

// Package tools pins the kube-state-metrics that hack/build-kube-state-metrics.sh
// builds (tests/e2e/prometheus.rs runs it with the chart's CustomResourceStateMetrics
// config for KopfAudit conditions).
package tools

import _ "k8s.io/kube-state-metrics/v2"
