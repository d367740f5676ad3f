package ingestv1

// AuthorizationKey is the gRPC metadata key that carries a client's token,
// as "Bearer TOKEN". It is part of the protocol: do not change it.
const AuthorizationKey = "authorization"
