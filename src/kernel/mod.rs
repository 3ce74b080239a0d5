//! The kernel: commands become events.
//!
//! ```text
//! Command ──► Kernel::execute ──► writer task (one per kernel, the only appender)
//!                                   │ govern: a governed command is decided by the
//!                                   │         policy; its decision joins the batch
//!                                   │ decide: validate against KernelState (CXP state
//!                                   │         machines, threads, sessions, registry)
//!                                   │ emit:   fold each event into KernelState, let
//!                                   │         the Postman react (admit, fail, retry,
//!                                   │         notify)
//!                                   ▼
//!                            group append (one batch per stream) ──► Outcome
//!                            with the (stream, sequence) of every event
//! ```
//!
//! - **One writer.** Commands are serialized through one tokio task fed by an mpsc
//!   channel ([`Kernel`] is the cheap, cloneable sender side). Commands waiting in the
//!   channel are taken together and appended as one group (group commit), so throughput
//!   grows with the number of concurrent callers while each caller still sees its
//!   command applied in order.
//! - **One fold.** [`KernelState::apply`] rebuilds the state at start from the six
//!   streams the kernel folds (`load::FOLDED`: `volk.lifecycle`, `session.events`,
//!   `workflow.events`, `cxp.traffic`, `kernel.events`, `provider.events`) and applies
//!   every event of those streams the writer appends; time always comes from event
//!   timestamps.
//! - **A rejected command emits no events of its own** and returns a [`KernelError`]
//!   whose [`KernelError::code`] is stable. What its request carried is appended all
//!   the same: the gateway's audit record of the call, and, for a governed command, the
//!   policy's decision (`decision recorded`, allow or deny). Commands from the
//!   `commands` stream ([`Kernel::consume_commands`]) also get a `command_applied` or
//!   `command_rejected` event, and an already executed command id is not executed again.
//! - **The Postman** ([`postman`]) keeps per-recipient queues in serving order, delivers
//!   when a Volk reads its inbox ([`Kernel::inbox`]), fails packets whose recipient is
//!   deregistered, unhealthy or full, retries with exponential backoff on the
//!   [`Clock`], and finally notifies the sender with a `delivery_failed` packet.
//! - **Sessions** (Articles I and III): packets name their session in metadata
//!   `session_id`; closing archives resolved packets and carries unresolved packets and
//!   active threads over; resuming reopens the session; reads across sessions must
//!   name the session ([`Kernel::thread_packets`]).
//!
//! See `docs/kernel.md` for the command table and error codes.

mod clock;
pub mod cmd;
mod config;
mod consumer;
mod contain;
pub mod convert;
mod decide;
mod error;
mod govern;
mod handle;
mod landing;
mod load;
mod outcome;
pub mod postman;
mod recorder;
pub mod remote;
pub mod roster;
pub mod state;
mod writer;

pub use clock::{Clock, TokioClock};
pub use config::KernelConfig;
pub use consumer::IN_FLIGHT;
pub use error::{Fault, KernelError};
pub use handle::{Kernel, StartReport};
pub use load::{rebuild, FOLDED};
pub use outcome::{Appended, Inbox, Outcome};
pub use remote::RemoteKernel;
pub use state::KernelState;
