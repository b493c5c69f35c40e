package auth

import "context"

type tenantKey struct{}

// WithTenant returns ctx carrying the authenticated tenant, for handlers
// outside gin (the MCP endpoint) that need to know whose request it is.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantFrom returns the tenant WithTenant put in ctx; ok is false when
// none was (the request was not authenticated by chatpipe).
func TenantFrom(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(tenantKey{}).(string)
	return t, ok && t != ""
}
