package service

// Delegations is the operations on delegated sessions (see the package doc).
type Delegations interface {
}
