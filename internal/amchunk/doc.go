// Package amchunk reads automerge's binary chunks (changes, compressed
// changes and whole documents, as automerge-go's SaveChanges, Save and
// sync messages carry them) far enough to tell what applying them would
// cost — how many operations, predecessor references and value bytes they
// hold — without applying them.
//
// A chunk is tiny next to what it asks for: run-length encoding lets a
// few bytes describe a billion operations, and one frame of a megabyte
// inserts a million characters, which automerge spends seconds of CPU and
// gigabytes of memory applying. Callers that take changes from others
// (a sync peer, a merge) measure first and refuse what cannot fit, in time
// proportional to the bytes read, never to what they describe.
//
// Measure decodes only column lengths and run counts; it does not check
// checksums or hashes (automerge does when the data is applied), so a
// chunk it accepts may still be refused later as corrupt.
package amchunk
