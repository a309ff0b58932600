//go:build tools

// Package tools pins the helm CLI that hack/build-helm.sh builds.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
