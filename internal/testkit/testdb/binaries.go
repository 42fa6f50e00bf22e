package testdb

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// errNoOwnServer says that testdb cannot run a server of its own here, as
// the server's binaries are not installed: the tests try a container.
var errNoOwnServer = errors.New("no server of testdb's own")

// postgresBinaries finds PostgreSQL's initdb and postgres: initdb on PATH
// with the postgres beside the file it links to (initdb itself insists on
// that), else the highest version under /usr/lib/postgresql/*/bin, where
// Debian's packages install them without putting them on PATH.
func postgresBinaries() (initdb, postgres string, err error) {
	dirs := []string{}
	if found, err := exec.LookPath("initdb"); err == nil {
		if resolved, err := filepath.EvalSymlinks(found); err == nil {
			dirs = append(dirs, filepath.Dir(resolved))
		}
	}
	dirs = append(dirs, versionDirs("/usr/lib/postgresql/*/bin")...)
	for _, dir := range dirs {
		initdb, postgres = filepath.Join(dir, "initdb"), filepath.Join(dir, "postgres")
		if executable(initdb) && executable(postgres) {
			return initdb, postgres, nil
		}
	}
	return "", "", fmt.Errorf("%w: PostgreSQL's initdb and postgres are not on PATH or in /usr/lib/postgresql/*/bin", errNoOwnServer)
}

// mariadbBinaries finds MariaDB's mariadb-install-db (or mysql_install_db)
// and its server mariadbd (or mysqld) on PATH, else in /usr/sbin or
// /usr/bin, which are not on every PATH.
func mariadbBinaries() (install, server string, err error) {
	install = findProgram("mariadb-install-db", "mysql_install_db")
	server = findProgram("mariadbd", "mysqld")
	if install == "" || server == "" {
		return "", "", fmt.Errorf("%w: MariaDB's mariadb-install-db and mariadbd are not on PATH or in /usr/sbin, /usr/bin", errNoOwnServer)
	}
	return install, server, nil
}

// findProgram returns the first of names found on PATH, else in /usr/sbin
// or /usr/bin, or "" when none is.
func findProgram(names ...string) string {
	for _, name := range names {
		if found, err := exec.LookPath(name); err == nil {
			return found
		}
		for _, dir := range []string{"/usr/sbin", "/usr/bin"} {
			if path := filepath.Join(dir, name); executable(path) {
				return path
			}
		}
	}
	return ""
}

// versionDirs returns the directories that pattern matches, the highest
// version first, comparing the first element that differs between the
// directories (such as "15" in /usr/lib/postgresql/15/bin) as numbers.
func versionDirs(pattern string) []string {
	dirs, _ := filepath.Glob(pattern)
	slices.SortFunc(dirs, func(a, b string) int { return compareVersions(b, a) })
	return dirs
}

// compareVersions compares two paths element by element, numerically where
// both elements are numbers ("9.6" < "15"), else as text.
func compareVersions(a, b string) int {
	as, bs := strings.FieldsFunc(a, versionSeparator), strings.FieldsFunc(b, versionSeparator)
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, errX := strconv.Atoi(as[i])
		y, errY := strconv.Atoi(bs[i])
		switch {
		case errX == nil && errY == nil && x != y:
			return x - y
		case (errX != nil || errY != nil) && as[i] != bs[i]:
			return strings.Compare(as[i], bs[i])
		}
	}
	return len(as) - len(bs)
}

// versionSeparator splits a path into the elements compareVersions compares.
func versionSeparator(r rune) bool { return r == '/' || r == '.' }

// executable reports whether path is a regular file that someone may run.
func executable(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular() && info.Mode().Perm()&0o111 != 0
}
