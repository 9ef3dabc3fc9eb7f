//go:build !linux || !cgo

package ui

func trimMalloc() {}
