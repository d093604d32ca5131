// Package images owns the first links of the image chain (docs/seed.md, The image chain): the
// Image Factory schematic built from the Talos extensions, the factory URLs
// of the artifacts and installer, and the shared Object Storage object that
// the Block snapshot import reads. It knows nothing of GitHub nor of
// clusters: an object is keyed by schematic and version, and is shared by
// every cluster that uses the same pair.
//
// Why the control planes use the scaleway-amd64.qcow2 artifact: the seed
// stores its image as talos/metal-amd64.qcow2 but asks the factory for
// platform=scaleway. Only the scaleway platform image reads the Instance's
// user data from the Scaleway metadata service and runs Talos in cloud mode;
// a metal image would boot into maintenance mode waiting for a config. The
// object key therefore names the platform truthfully:
// talos/<schematic>/<version>/scaleway-amd64.qcow2. The worker (Elastic
// Metal) uses the metal platform's raw.zst (raw.xz when the rescue system
// has no zstd), fetched by its rescue system.
package images
