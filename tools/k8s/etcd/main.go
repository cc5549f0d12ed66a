// Command etcd is a thin wrapper around the upstream etcd server entry point
// (go.etcd.io/etcd/server/v3/etcdmain), built as its own module because the
// upstream server module uses relative replace directives and therefore cannot
// be installed with `go install`. See docs/control-plane.md.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
