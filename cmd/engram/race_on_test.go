//go:build race

package main

import (
	"time"

	"github.com/engram-go/engram/internal/abuse"
)

// Under -race TestSyncMeasure syncs a tenth of its peers: the detector
// slows both ends, and 200 peers' automerge documents take 2 GB.
const syncMeasureScale = 10

// abuseSizes: under -race TestServeUnderAbuse's server is built without
// the detector, but this process makes the payloads and runs the victim
// under it: the list and the map, made item by item here, are a tenth
// and two sevenths of the bench's, the rest as without -race. Their
// bounds scale with them (abuse.Result.Violations), to a quarter of the
// goal at least.
var abuseSizes = abuse.Sizes{Chars: 200_000, ListItems: 100_000, MapKeys: 100_000, Depth: 10_000, Changes: 1_000,
	Conns: 4, BatchCalls: 60_000, Huge: 16 << 20, Slow: 2 * time.Second}

// abuseSlack is added to twice the victim's quiet p99: scheduler noise,
// and the detector's own pauses in the victim's client.
const abuseSlack = 100 * time.Millisecond
