package service

// Workflows is the operations on workflow instances (see the package doc).
type Workflows interface {
}
