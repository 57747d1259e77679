//! Agent adapters: one per CLI. Pure: bytes in, [`AgentEvent`]s out; tested on recorded streams.
//! (Being built: issue 3.)
