package service

// Messages is the operations on post, read and follow a channel, status, wait for a reply, who (see the package doc).
type Messages interface {
}
