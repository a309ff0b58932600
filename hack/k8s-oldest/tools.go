//go:build tools

// Package tools pins the kube-apiserver that hack/oldest-kube.sh builds: the oldest
// Kubernetes release the chart's kubeVersion admits.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
