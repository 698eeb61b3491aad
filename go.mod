module collab

go 1.26.8

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/spf13/pflag v1.0.10
	golang.org/x/sys v0.49.0
	mvdan.cc/sh/v3 v3.14.1
)
