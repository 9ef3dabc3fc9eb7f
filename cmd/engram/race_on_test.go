//go:build race

package main

// Under -race TestSyncMeasure syncs a tenth of its peers: the detector
// slows both ends, and 200 peers' automerge documents take 2 GB.
const syncMeasureScale = 10

// Under -race TestSyncAppendLatency allows three times the latency.
const syncLatencyScale = 3
