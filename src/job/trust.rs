//! What a store is trusted with: capabilities refined by the catalog and a saved probe.
