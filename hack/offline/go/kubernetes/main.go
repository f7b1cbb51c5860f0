// Command pulumi-resource-kubernetes serves the Pulumi Kubernetes provider.
//
// It is built by toolchain/build.sh from the upstream provider module; the two embedded
// JSON files are generated there from the module's schema.json and
// terraform-mapping.json (with the schema's version set to the pinned release).
package main

import (
	_ "embed"

	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/provider"
	"github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version"
)

//go:embed schema-embed.json
var pulumiSchema []byte

//go:embed terraform-mapping-embed.json
var terraformMapping []byte

func main() {
	provider.Serve("kubernetes", version.Version, pulumiSchema, terraformMapping)
}
