package lockkey_test

import (
	"slices"
	"testing"

	"github.com/taskrepo/taskrepo/internal/lockkey"
)

func TestIdentifiersAreDistinctAndAscending(t *testing.T) {
	t.Parallel()
	keys := lockkey.Identifiers("public", "t", []string{"b", "a", "b", "c"})
	if len(keys) != 3 || !slices.IsSorted(keys) {
		t.Errorf("keys of a, b, b, c = %v, want three ascending", keys)
	}
	if slices.Equal(keys, lockkey.Identifiers("public", "u", []string{"a", "b", "c"})) {
		t.Error("the same identifiers of two topics share their keys")
	}
	// The parts are kept apart: "ab" + "c" is not "a" + "bc".
	if lockkey.Topic("ab", "c") == lockkey.Topic("a", "bc") {
		t.Error("schema ab, topic c and schema a, topic bc share a key")
	}
}

func TestTermKeysAreThoseOfTheTopic(t *testing.T) {
	t.Parallel()
	if lockkey.Term("public", "t") == lockkey.Term("public", "u") || lockkey.Term("public", "t") == lockkey.Term("other", "t") {
		t.Error("the terms of two topics share a key")
	}
	if lockkey.TermSpace == lockkey.InsertionSpace || lockkey.TermSpace == lockkey.IdentifierSpace {
		t.Error("the term locks share their space with the locks of pushes")
	}
}
