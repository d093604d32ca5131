// Package soak finds the bugs that live between processes: it drives the emulated world
// (internal/sim/world) with seeded random histories — comments of users of every permission level,
// pull-request label/close/reopen/merge events, scheduled reaper runs, clock jumps, writes into the
// clusters' Kubernetes APIs, faults on the wire, and `bot handle` processes killed half-way and run
// again as GitHub would — and checks invariants after every step and after a final settle.
//
// The package owns the decisions and the checks, not the bot: a history is a pure function of its
// seed (Generate), the world is started and the events are delivered by Run, and each bot process
// is started through the Bot interface that cmd/bot implements with the very code path of
// `bot handle`. Every process talks to Scaleway, GitHub, Object Storage and the Image Factory
// through its own Wire (a loopback reverse proxy): the wire injects the history's faults, and
// killing a process cuts its wire at a chosen request — from the outside that is what SIGKILL
// does (nothing more leaves the process; a request in flight may have taken effect or not), while
// staying in one Go process, fast and reproducible in its decisions. The Talos nodes are reached
// directly, not through a wire: while a process with faults runs, the world's nodes answer the
// same rate of calls Unavailable, or late (talossim.Faults).
//
// The invariants (Check) are:
//   - nothing billed is orphaned: after the settle, every Scaleway resource the bot tagged belongs
//     to a live cluster state or is the shared image;
//   - at most one of each node's resources per cluster (no duplicate from a retried create);
//   - the budget (max_clusters, max_daily_eur) of each repository is never exceeded, after any
//     step;
//   - every command comment a process finished answering has 👀, and got at most two new bot
//     comments (the sticky status comment and one notification);
//   - no secret in any comment, log line, job summary or step output;
//   - every state document reads and decrypts;
//   - after the settle no lock is held beyond its lease;
//   - a resumed cluster holds every object written before its pause, as last written: users
//     create, update and delete ConfigMaps and Secrets with the kubeconfig the bot issued them
//     (KindKube: after an up, before every pause, after every resume), and every such object of a
//     ready cluster is read back after every step, a deleted one must be gone (kube.go);
//   - a paused cluster bills no machine;
//   - every accrued cost a bot comment states is the cluster's daily cost ÷ 24 per started hour
//     since the creation its state records, at the clock of a process running when the comment
//     was written (accrual.go).
//
// What a history may not decide: Go's scheduler and the loopback network set the exact
// interleaving, so a seed replays the same decisions (events, users, flags, faults, kill points,
// clock jumps, the clock's time of day: WorldConfig.Clock), not necessarily the same outcome; a failing seed is re-run and shrunk (Shrink)
// until the shortest history that still fails is found.
package soak
