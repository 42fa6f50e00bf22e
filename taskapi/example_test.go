package taskapi_test

import (
	"fmt"

	"github.com/taskrepo/taskrepo/taskapi"
)

// Results merge to the most severe one, which is how a task processed in
// several steps gets one result.
func Example() {
	steps := []taskapi.Result{taskapi.Success, taskapi.Filter, taskapi.Success}
	result := taskapi.Success
	for _, r := range steps {
		result = result.Merge(r)
	}
	fmt.Println(result, "→", result.State())

	state, err := taskapi.ParseState("suspended")
	fmt.Println(state, int(state), err)
	// Output:
	// FILTER → FILTERED
	// SUSPENDED 4 <nil>
}

func ExampleResult_Merge() {
	fmt.Println(taskapi.Success.Merge(taskapi.Failure))
	fmt.Println(taskapi.Filter.Merge(taskapi.Suspension))
	// Output:
	// FAILURE
	// SUSPENSION
}
