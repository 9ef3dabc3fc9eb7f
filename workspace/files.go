package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"

	"github.com/engram-go/engram/blocks"
)

// maxFileBytes caps what Import reads of one file: a block holds at most
// blocks.MaxCharLimit characters, and UTF-8 takes at most 4 bytes for one.
// Without a cap, MEMORY.md -> /dev/zero (or a huge file) ran the process
// out of memory.
const maxFileBytes = 4 * blocks.MaxCharLimit

// absent reports an error that means "no such file here": the file or a
// directory on its way is missing, or a path component is not a directory
// (skills/README.md/SKILL.md).
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// pathError describes a failure to reach rel inside the workspace. Short of
// a permission problem it is reported as ErrUnsafeFile: what os.Root
// refuses is a symbolic link that leaves the directory (or is absolute) or
// a loop of links.
func pathError(op, rel string, err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return fmt.Errorf("workspace: %s %s: %w", op, rel, err)
	}
	return fmt.Errorf("%w: %s %s: %w", ErrUnsafeFile, op, rel, err)
}

// readFile reads rel (slash-separated) from root: a regular file, reached
// without leaving root (os.Root follows a symbolic link only while it
// stays inside), at most maxFileBytes long. found is false when there is
// no such file.
func readFile(root *os.Root, rel string) (data []byte, found bool, err error) {
	name := filepath.FromSlash(rel)
	// Refuse what is not a regular file before opening it: opening a FIFO
	// waits for a writer forever, and a device (/dev/zero) never ends.
	fi, err := root.Stat(name)
	switch {
	case absent(err):
		return nil, false, nil
	case err != nil:
		return nil, false, pathError("read", rel, err)
	case !fi.Mode().IsRegular():
		return nil, false, fmt.Errorf("%w: %s is a %s, not a regular file", ErrUnsafeFile, rel, kind(fi.Mode()))
	}
	// The file can be swapped between the check and the open: O_NONBLOCK
	// keeps a FIFO put there from blocking the open, and the check is
	// repeated on the opened file (fstat), which nothing can swap.
	f, err := root.OpenFile(name, os.O_RDONLY|nonblock, 0)
	if err != nil {
		if absent(err) {
			return nil, false, nil
		}
		return nil, false, pathError("read", rel, err)
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, false, fmt.Errorf("workspace: read %s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%w: %s is a %s, not a regular file", ErrUnsafeFile, rel, kind(fi.Mode()))
	}
	if fi.Size() > maxFileBytes {
		return nil, false, tooLarge(rel)
	}
	data, err = io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, false, fmt.Errorf("workspace: read %s: %w", rel, err)
	}
	if len(data) > maxFileBytes { // it grew after the fstat
		return nil, false, tooLarge(rel)
	}
	return data, true, nil
}

func tooLarge(rel string) error {
	return fmt.Errorf("%w: %s is larger than a block may be (%d characters)", ErrTooLarge, rel, blocks.MaxCharLimit)
}

func kind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	}
	return "special file"
}

// skillNames lists the entries of skills/ that hold a SKILL.md, sorted.
// A skill directory that is a symbolic link leaving the workspace is an
// error (ErrUnsafeFile), not a skill read from elsewhere.
func skillNames(root *os.Root) ([]string, error) {
	fi, err := root.Stat("skills")
	if absent(err) {
		return nil, nil
	}
	if err != nil {
		return nil, pathError("read", "skills", err)
	}
	if !fi.IsDir() {
		return nil, nil
	}
	d, err := root.OpenFile("skills", os.O_RDONLY|nonblock, 0)
	if err != nil {
		return nil, pathError("read", "skills", err)
	}
	defer d.Close()
	if fi, err := d.Stat(); err != nil || !fi.IsDir() {
		return nil, nil // swapped for a file since the check: no skills
	}
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, fmt.Errorf("workspace: read skills: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			continue
		}
		rel := "skills/" + e.Name() + "/SKILL.md"
		if _, err := root.Lstat(filepath.FromSlash(rel)); absent(err) {
			continue
		} else if err != nil {
			return nil, pathError("read", rel, err)
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

// writeFile writes data to rel (slash-separated) inside root without
// following a link there: the text goes to a new temporary file (0600,
// O_EXCL, so never an existing file or link) in the same directory, which
// is then renamed over rel. A symbolic link at rel is replaced, not
// written through (exp/SOUL.md -> ../outside/victim.txt once overwrote
// the victim with block text an agent can write), and a reader never sees
// half a file. Directories on the way are made 0700 inside root; a link
// among them that leaves root is an error.
func writeFile(root *os.Root, rel string, data []byte) error {
	name := filepath.FromSlash(rel)
	dir, base := filepath.Split(name)
	if dir != "" {
		if err := root.MkdirAll(filepath.Clean(dir), 0o700); err != nil {
			return pathError("write", rel, err)
		}
	}
	var (
		f   *os.File
		tmp string
		err error
	)
	for range 100 {
		tmp = filepath.Join(dir, "."+base+".tmp-"+strconv.FormatUint(rand.Uint64(), 36))
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return pathError("write", rel, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
		return fmt.Errorf("workspace: write %s: %w", rel, err)
	}
	return nil
}
