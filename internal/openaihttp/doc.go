// Package openaihttp holds the HTTP plumbing shared by the clients of
// OpenAI-compatible APIs (the embedder of package search, the summarizer of
// package compress): a JSON POST retried on 429, 5xx and network errors
// with capped exponential backoff that honours Retry-After, and helpers to
// turn OpenAI-, Ollama- or plain-text error bodies into readable messages.
//
// Errors are typed (*Error, *CanceledError) and carry no sentinel of their
// own, so that each caller can wrap them in its package's sentinel.
package openaihttp
