//go:build !race

package main

import (
	"time"

	"github.com/engram-go/engram/internal/abuse"
)

const syncMeasureScale = 1

// abuseSizes are TestServeUnderAbuse's attacks: a fifth of the bench's
// sizes where the attack's payload is made by this process (and a
// twenty-fifth of its one-character changes), so that the file stays
// within CI's budget. Their bounds scale with them (abuse.Result.Violations).
var abuseSizes = abuse.Sizes{Chars: 200_000, ListItems: 200_000, MapKeys: 200_000, Depth: 10_000, Changes: 1_000,
	Conns: 4, BatchCalls: 60_000, Huge: 16 << 20, Slow: 2 * time.Second}

// abuseSlack is added to twice the victim's quiet p99 in
// TestServeUnderAbuse: scheduler noise on a shared two-core machine.
const abuseSlack = 50 * time.Millisecond
