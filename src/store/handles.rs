//! What a store's handle can do, asked as methods instead of branches on the fields that hold
//! its concrete clients: a local folder's root, the S3 or Azure client moverctl signs its own
//! requests with, whether requests go unsigned (a public bucket), whether the store stands for
//! one object only. The engine asks these; which kinds answer what is decided when the store is
//! opened.

use super::Store;
use object_store::aws::AmazonS3;
use object_store::azure::MicrosoftAzure;
use std::path::Path;
use std::sync::Arc;

impl Store {
    /// The folder keys are relative to, for a local folder.
    pub fn local_root(&self) -> Option<&Path> {
        self.local_root.as_deref()
    }

    /// A local folder (read and written with file system calls, not requests).
    pub fn is_local(&self) -> bool {
        self.local_root.is_some()
    }

    /// The S3 client, for presigned requests object_store cannot make; None elsewhere.
    pub fn as_s3(&self) -> Option<&Arc<AmazonS3>> {
        self.s3.as_ref()
    }

    /// The Azure client, for its SAS signer (Put Block From URL, a source URL); None elsewhere.
    pub fn as_azure(&self) -> Option<&Arc<MicrosoftAzure>> {
        self.azure.as_ref()
    }

    /// An Azure Blob location.
    pub fn is_azure(&self) -> bool {
        self.azure.is_some()
    }

    /// Requests moverctl presigns itself are sent without their signature (S3 with anonymous
    /// access).
    pub fn is_anonymous(&self) -> bool {
        self.s3_anonymous
    }

    /// The store is used for one object only (`copy FILE DST`).
    pub fn is_single(&self) -> bool {
        self.single.is_some()
    }
}
