//go:build !race

package main

const syncMeasureScale = 1

// syncLatencyScale multiplies TestSyncAppendLatency's bound.
const syncLatencyScale = 1
