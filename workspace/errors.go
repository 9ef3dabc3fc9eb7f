package workspace

import "errors"

var (
	// ErrInvalidFile is returned for a file that cannot become a block (not
	// UTF-8, a bad skill name).
	ErrInvalidFile = errors.New("workspace: invalid file")
	// ErrUnsafeFile is returned for a workspace path that is not a regular
	// file inside the directory: a symbolic link that leaves it (or an
	// absolute one), a FIFO, a device, a socket. Import never reads such a
	// file and Export never writes through one; the message names the
	// path.
	ErrUnsafeFile = errors.New("workspace: not a regular file inside the workspace directory")
	// ErrTooLarge is returned by Import for a file longer than a block can
	// be (blocks.MaxCharLimit characters); the message names the file.
	ErrTooLarge = errors.New("workspace: file too large for a block")
)
