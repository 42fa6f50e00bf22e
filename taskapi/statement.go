package taskapi

import "context"

// singleStatement is the key of the mark of SingleStatement.
type singleStatement struct{}

// SingleStatement returns a context that tells a transaction function (the
// Transact given to taskproc, such as taskpg.Transact) that the work it is
// given sends one statement, or one round trip, that commits by itself on a
// pool: it may then run the work on its handle without BEGIN and COMMIT,
// two round trips fewer. One that ignores the mark stays correct. taskproc
// marks its polls that read nothing else and its heartbeats.
func SingleStatement(ctx context.Context) context.Context {
	return context.WithValue(ctx, singleStatement{}, true)
}

// IsSingleStatement reports whether ctx carries the mark of SingleStatement.
func IsSingleStatement(ctx context.Context) bool {
	marked, _ := ctx.Value(singleStatement{}).(bool)
	return marked
}
