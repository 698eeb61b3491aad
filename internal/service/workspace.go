package service

// Workspace is the operations on inbox, documents, tasks, jobs, keys (see the package doc).
type Workspace interface {
}
