package testdb

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
)

// account is the unprivileged user that runs a server of testdb's own when
// the tests run as root: initdb, postgres and mariadbd refuse to run as
// root, or must be told whom to become.
type account struct {
	name     string
	uid, gid uint32
}

// serverAccount returns the account that runs a server, nil when the tests
// do not run as root and the server runs as the current user. It is the
// first of names that exists, else "nobody".
func serverAccount(names ...string) (*account, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range append(names, "nobody") {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, errU := strconv.ParseUint(u.Uid, 10, 32)
		gid, errG := strconv.ParseUint(u.Gid, 10, 32)
		if errU != nil || errG != nil {
			return nil, fmt.Errorf("user %s has ids %s:%s, not numbers", name, u.Uid, u.Gid)
		}
		return &account{name: name, uid: uint32(uid), gid: uint32(gid)}, nil
	}
	return nil, fmt.Errorf("running as root, and none of the users %v exists to run the server", append(names, "nobody"))
}

// own gives path to a, unless a is nil.
func (a *account) own(path string) error {
	if a == nil {
		return nil
	}
	if err := os.Chown(path, int(a.uid), int(a.gid)); err != nil {
		return fmt.Errorf("give %s to user %s: %w", path, a.name, err)
	}
	return nil
}
