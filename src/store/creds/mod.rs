//! Where credentials come from. Values are read here and handed to object_store; they are never
//! formatted, logged or stored. Errors name the variable, profile or file that would satisfy
//! them, never a value.
//!
//! S3 order (first match wins; the AWS CLI's order, with a remote's own settings first):
//! | source | how | renewed |
//! |---|---|---|
//! | remote `anonymous = true` | unsigned requests | - |
//! | remote `access_key_id_env` / `secret_access_key_env` | the named variables | never |
//! | remote `profile`, else `--profile` | that shared-config profile alone (aws-config) | yes |
//! | `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`) | environment | never |
//! | `AWS_PROFILE` (else the `default` profile) | the profile (aws-config): keys, `role_arn` + `source_profile` / `credential_source` (chained), `sso_session` and legacy SSO, `credential_process`, `web_identity_token_file` | yes |
//! | `AWS_WEB_IDENTITY_TOKEN_FILE` + `AWS_ROLE_ARN` | web identity (EKS IRSA) | yes |
//! | `AWS_CONTAINER_CREDENTIALS_*` | ECS task role, EKS Pod Identity | yes |
//! | - | EC2 instance metadata (IMDSv2); `AWS_EC2_METADATA_DISABLED=true` turns it off | yes |
//!
//! Every source but anonymous is served through one [`super::awscreds::AwsCredentialCache`] per store.
//!
//! By provider: `aws` (S3), `gcp` (GCS), `azure`; `common` holds the error and the
//! environment reading they share.

mod aws;
mod azure;
mod common;
mod gcp;

pub use aws::{
    S3Creds, S3Resolved, StaticKeys, describe_profile, lifetime_note, s3, s3_cache, s3_provider,
    set_cli_profile, sts_region,
};
pub use azure::{AZURE_ENTRA_VARS, AzureCreds, azure, azure_fix};
pub use common::MissingCredentials;
pub use gcp::{GcsCreds, gcs, google_file_field};
