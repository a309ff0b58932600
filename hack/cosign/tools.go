//go:build tools

// Package tools pins the cosign CLI that signs and verifies hack/release.sh's artifacts,
// and the crane CLI whose registry (`crane registry serve`) holds the image while it does.
package tools

import (
	_ "github.com/google/go-containerregistry/cmd/crane"
	_ "github.com/sigstore/cosign/v2/cmd/cosign"
)
