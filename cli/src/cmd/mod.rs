//! One module per subcommand.

pub mod info;
