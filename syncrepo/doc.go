// Package syncrepo speaks the automerge-repo network protocol (version
// "1", as @automerge/automerge-repo 2.x and its WebSocket adapter do) on
// the server side, for engram serve's /sync: CBOR frames (join/peer,
// sync, request, doc-unavailable, ephemeral, error), automerge: URLs, and
// a Session that syncs the blocks one agent may read with one peer
// connection, every change the peer sends going through the store's
// checked merge (memory.Block.Merge on the agent's handle).
//
//	err := syncrepo.Serve(ctx, conn, store.Agent("ada"), &syncrepo.Options{Notifier: store})
//
// The transport (a WebSocket), authentication and the choice of agent
// belong to the caller: a Session trusts nothing the peer says about
// itself, PeerIds included.
package syncrepo
