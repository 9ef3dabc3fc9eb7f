//go:build !race

package main

const syncMeasureScale = 1
