// Command depcheck imports every library the design pins so that `go build ./...` warms the cache.
package main

import (
	_ "filippo.io/age"
	_ "filippo.io/age/agessh"
	_ "github.com/bradleyfalzon/ghinstallation/v2"
	_ "github.com/google/go-github/v66/github"
	_ "github.com/scaleway/scaleway-sdk-go/api/baremetal/v1"
	_ "github.com/scaleway/scaleway-sdk-go/api/block/v1alpha1"
	_ "github.com/scaleway/scaleway-sdk-go/api/domain/v2beta1"
	_ "github.com/scaleway/scaleway-sdk-go/api/iam/v1alpha1"
	_ "github.com/scaleway/scaleway-sdk-go/api/instance/v1"
	_ "github.com/scaleway/scaleway-sdk-go/api/product_catalog/v2alpha1"
	_ "github.com/scaleway/scaleway-sdk-go/scw"
	_ "github.com/siderolabs/talos/pkg/machinery/api/machine"
	_ "github.com/siderolabs/talos/pkg/machinery/client"
	_ "github.com/siderolabs/talos/pkg/machinery/config/configpatcher"
	_ "github.com/siderolabs/talos/pkg/machinery/config/generate"
	_ "github.com/siderolabs/talos/pkg/machinery/config/generate/secrets"
	_ "gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/s3blob"
	_ "gocloud.dev/secrets"
	_ "gocloud.dev/secrets/localsecrets"
	_ "golang.org/x/crypto/ssh"
)

func main() {}
