// Package provision owns what one pocbot cluster is and how it comes and goes: the Spec (the
// seed's defaults and their validation), the State (the encrypted body the caller persists:
// resource records, the cluster's generated SSH key pair, trigger hashes, free-form secrets and
// outputs, the cancel flag), the resource Graph (an open set of Nodes that other packages extend),
// and the Engine that applies the graph in parallel as dependencies allow, resumes from state and
// tag look-ups after a crash, destroys it in reverse order and sweeps tagged orphans.
//
// It knows nothing of GitHub, of Scaleway's types (see provision/scaleway) or of how the state is
// stored (see the Saver interface): the caller wires those in.
package provision
