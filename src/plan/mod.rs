pub mod corpus;
pub mod model;
