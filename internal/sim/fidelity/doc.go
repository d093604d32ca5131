// Package fidelity replays recorded HTTP exchanges (go-vcr v4 cassettes, as `--record DIR` and the
// Action's recording artifact write them: internal/record) against the stand-ins, and measures how
// alike their answers are to the recorded ones. A user's first real run, attached to an issue,
// becomes a test: `make fidelity CASSETTES=DIR` prints the match rate and every mismatch.
//
// What "match" means is Compare's definition: the same method and route (the replay sends the
// recorded request, ids substituted), the same status class (and the same code for a 4xx), and a
// body that decodes as the route's SDK type on both sides with the same fields present, values
// aside. Fields rather than values, because two runs never share an id, an address or a date;
// the SDK's types rather than the raw keys, because what the SDK does not read the bot cannot
// depend on, while a field the SDK reads and the stand-in lacks is a stand-in that lies to the bot.
//
// Scaleway exchanges replay against the emulator (internal/sim/scaleway), in-process, its clock
// following the recorded Date headers; Object Storage exchanges against versitygw behind the
// Scaleway dialect (internal/sim/objstore), signed again with the stand-in's keys, an object's
// elided bytes replaced by as many zeros. GitHub exchanges are recorded but not replayed (Replay's
// report says so): the GitHub stand-in would need the recording's repository, App, installation
// and users made first.
package fidelity
