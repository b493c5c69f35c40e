package handler

import (
	"net/http/pprof"

	"github.com/gin-gonic/gin"
)

// routePprof serves Go's runtime profiles at /debug/pprof/ (server.pprof):
// the index and every named profile (heap, goroutine, allocs, …) through
// pprof.Index, plus the CPU profile, the execution trace, the command line
// and symbol lookup. Outside the API group: no key, like the metrics.
func routePprof(r *gin.Engine) {
	g := r.Group("/debug/pprof")
	g.GET("/", gin.WrapF(pprof.Index))
	g.GET("/cmdline", gin.WrapF(pprof.Cmdline))
	g.GET("/profile", gin.WrapF(pprof.Profile))
	g.GET("/symbol", gin.WrapF(pprof.Symbol))
	g.POST("/symbol", gin.WrapF(pprof.Symbol))
	g.GET("/trace", gin.WrapF(pprof.Trace))
	g.GET("/:profile", gin.WrapF(pprof.Index))
}
