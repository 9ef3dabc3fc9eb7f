// Package toolrules constrains which tools an agent may call, and when.
//
// # Model
//
// A turn is one run of an agent loop: from the input the agent answers until
// the agent stops. Within a turn the model makes tool calls, one after the
// other (calls the model makes in parallel count in the order they are
// checked). In engram's message store a turn's messages form one batch, so the
// per-turn state described here is also the per-batch state: save it
// (Engine.State) next to the batch and restore it (Engine.Restore) to resume
// an interrupted turn. Engine.NewTurn starts the next turn.
//
// A Rule is a plain value naming a Kind and the tool it is about. The kinds:
//
//   - StartConstraint(t): t must be the first call of every turn.
//   - ExitLoop(t): the turn ends after t; no other call is allowed after it
//     in the turn.
//   - ContinueLoop(t): the turn goes on after t (the loop asks the model
//     again).
//   - MaxCalls(t, n): t may be called at most n times per turn.
//   - RequiresPrior(t, p...): t may be called only once every p has been
//     called in the turn.
//   - RequiresFollowing(t, f...): after each call of t, every f must be called
//     before the turn may end.
//   - RequiredBeforeExit(t): t must be called before the turn may end.
//   - ExclusiveGroup(t...): at most one of the tools may be used per turn.
//   - Cooldown(t, d): at least d must pass between two calls of t, across
//     turns (on the Engine's clock).
//   - RequiresConsent(t): every call of t must be approved by an Approver;
//     without one it is denied.
//
// "The turn may end" covers both ways a turn ends: calling an ExitLoop tool,
// and the model answering without calling a tool. The Engine refuses an
// ExitLoop call while something is still owed, and reports CanEnd false (with
// the owed tools in Pending) so a loop can send the model back to work.
//
// # Prompt and enforcement
//
// Render writes the rules as the "# Tool Execution Rules" section of a system
// prompt, one sentence per rule in a stable order. An Engine enforces every
// rule it renders; none is prompt-only. Check (or Call) answers whether a
// call may be made now, returning a *Violation that names the broken rule;
// Allowed filters the tool list to send the model; Ends says whether a call
// ends the turn; Pending and CanEnd say what is still owed.
//
// Validate checks a rule set before use, reporting invalid arguments,
// contradictions, tools that can never be called and turns that can never
// end; NewEngine refuses a rule set with problems.
//
// The package uses only the standard library.
package toolrules
