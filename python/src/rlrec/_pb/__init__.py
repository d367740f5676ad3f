"""Generated protobuf modules (python/gen_proto.sh); do not edit."""
