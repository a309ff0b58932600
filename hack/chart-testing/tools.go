//go:build tools

// Package tools pins the chart-testing CLI (`ct`) that hack/build-chart-testing.sh builds.
package tools

import _ "github.com/helm/chart-testing/v3/ct"
