//! A2A 0.3's gRPC messages (`a2a.v1`), written from the specification's
//! service definition: the fields the gateway reads or writes. The wire
//! differs from 1.0's (`v10`): a send request's message is field 1, task
//! requests name `tasks/{id}`, an artifact's fields start at 3, parts are
//! text, file or data, and a status update says `final`.

use prost_types::{Struct, Timestamp};

/// The service's full name: the first segment of every method path.
pub const SERVICE: &str = "a2a.v1.A2AService";

/// A task's resource name, as the 0.3 requests carry it.
pub fn task_name(id: &str) -> String {
    format!("tasks/{id}")
}

// The numbers are 1.0's: only the spelling of 5 (`CANCELLED`) differs.
pub use crate::v10::{Role, TaskState};

#[derive(Clone, PartialEq, prost::Message)]
pub struct Part {
    #[prost(oneof = "part::Content", tags = "1, 2, 3")]
    pub content: Option<part::Content>,
    #[prost(message, optional, tag = "4")]
    pub metadata: Option<Struct>,
}

pub mod part {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Content {
        #[prost(string, tag = "1")]
        Text(String),
        #[prost(message, tag = "2")]
        File(super::FilePart),
        #[prost(message, tag = "3")]
        Data(super::DataPart),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FilePart {
    #[prost(oneof = "file_part::File", tags = "1, 2")]
    pub file: Option<file_part::File>,
    #[prost(string, tag = "3")]
    pub mime_type: String,
    #[prost(string, tag = "4")]
    pub name: String,
}

pub mod file_part {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum File {
        #[prost(string, tag = "1")]
        FileWithUri(String),
        #[prost(bytes = "vec", tag = "2")]
        FileWithBytes(Vec<u8>),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DataPart {
    #[prost(message, optional, tag = "1")]
    pub data: Option<Struct>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Message {
    #[prost(string, tag = "1")]
    pub message_id: String,
    #[prost(string, tag = "2")]
    pub context_id: String,
    #[prost(string, tag = "3")]
    pub task_id: String,
    #[prost(enumeration = "Role", tag = "4")]
    pub role: i32,
    #[prost(message, repeated, tag = "5")]
    pub content: Vec<Part>,
    #[prost(message, optional, tag = "6")]
    pub metadata: Option<Struct>,
    #[prost(string, repeated, tag = "7")]
    pub extensions: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskStatus {
    #[prost(enumeration = "TaskState", tag = "1")]
    pub state: i32,
    #[prost(message, optional, tag = "2")]
    pub update: Option<Message>,
    #[prost(message, optional, tag = "3")]
    pub timestamp: Option<Timestamp>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Artifact {
    #[prost(string, tag = "1")]
    pub artifact_id: String,
    #[prost(string, tag = "3")]
    pub name: String,
    #[prost(string, tag = "4")]
    pub description: String,
    #[prost(message, repeated, tag = "5")]
    pub parts: Vec<Part>,
    #[prost(message, optional, tag = "6")]
    pub metadata: Option<Struct>,
    #[prost(string, repeated, tag = "7")]
    pub extensions: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Task {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub context_id: String,
    #[prost(message, optional, tag = "3")]
    pub status: Option<TaskStatus>,
    #[prost(message, repeated, tag = "4")]
    pub artifacts: Vec<Artifact>,
    #[prost(message, repeated, tag = "5")]
    pub history: Vec<Message>,
    #[prost(message, optional, tag = "6")]
    pub metadata: Option<Struct>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskStatusUpdateEvent {
    #[prost(string, tag = "1")]
    pub task_id: String,
    #[prost(string, tag = "2")]
    pub context_id: String,
    #[prost(message, optional, tag = "3")]
    pub status: Option<TaskStatus>,
    #[prost(bool, tag = "4")]
    pub r#final: bool,
    #[prost(message, optional, tag = "5")]
    pub metadata: Option<Struct>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskArtifactUpdateEvent {
    #[prost(string, tag = "1")]
    pub task_id: String,
    #[prost(string, tag = "2")]
    pub context_id: String,
    #[prost(message, optional, tag = "3")]
    pub artifact: Option<Artifact>,
    #[prost(bool, tag = "4")]
    pub append: bool,
    #[prost(bool, tag = "5")]
    pub last_chunk: bool,
    #[prost(message, optional, tag = "6")]
    pub metadata: Option<Struct>,
}

/// What a stream carries; also `SendMessage`'s answer (tags 1 and 2).
#[derive(Clone, PartialEq, prost::Message)]
pub struct StreamResponse {
    #[prost(oneof = "stream_response::Payload", tags = "1, 2, 3, 4")]
    pub payload: Option<stream_response::Payload>,
}

pub mod stream_response {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Payload {
        #[prost(message, tag = "1")]
        Task(super::Task),
        #[prost(message, tag = "2")]
        Msg(super::Message),
        #[prost(message, tag = "3")]
        StatusUpdate(super::TaskStatusUpdateEvent),
        #[prost(message, tag = "4")]
        ArtifactUpdate(super::TaskArtifactUpdateEvent),
    }
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SendMessageConfiguration {
    #[prost(string, repeated, tag = "1")]
    pub accepted_output_modes: Vec<String>,
    #[prost(int32, tag = "3")]
    pub history_length: i32,
    #[prost(bool, tag = "4")]
    pub blocking: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SendMessageRequest {
    #[prost(message, optional, tag = "1")]
    pub request: Option<Message>,
    #[prost(message, optional, tag = "2")]
    pub configuration: Option<SendMessageConfiguration>,
    #[prost(message, optional, tag = "3")]
    pub metadata: Option<Struct>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetTaskRequest {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(int32, tag = "2")]
    pub history_length: i32,
}

/// `CancelTask`'s and `TaskSubscription`'s request: a task's name.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskNameRequest {
    #[prost(string, tag = "1")]
    pub name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetAgentCardRequest {}

/// The card, as far as the gateway uses it.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AgentCard {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(string, tag = "3")]
    pub url: String,
    #[prost(message, optional, tag = "4")]
    pub provider: Option<crate::v10::AgentProvider>,
    #[prost(string, tag = "5")]
    pub version: String,
    #[prost(string, tag = "6")]
    pub documentation_url: String,
    #[prost(message, optional, tag = "7")]
    pub capabilities: Option<AgentCapabilities>,
    #[prost(string, repeated, tag = "10")]
    pub default_input_modes: Vec<String>,
    #[prost(string, repeated, tag = "11")]
    pub default_output_modes: Vec<String>,
    #[prost(message, repeated, tag = "12")]
    pub skills: Vec<crate::v10::AgentSkill>,
    #[prost(bool, tag = "13")]
    pub supports_authenticated_extended_card: bool,
    #[prost(string, tag = "14")]
    pub preferred_transport: String,
    #[prost(message, repeated, tag = "15")]
    pub additional_interfaces: Vec<AgentInterface>,
    #[prost(string, tag = "16")]
    pub protocol_version: String,
    #[prost(string, tag = "18")]
    pub icon_url: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AgentInterface {
    #[prost(string, tag = "1")]
    pub url: String,
    #[prost(string, tag = "2")]
    pub transport: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AgentCapabilities {
    #[prost(bool, tag = "1")]
    pub streaming: bool,
    #[prost(bool, tag = "2")]
    pub push_notifications: bool,
    #[prost(message, repeated, tag = "3")]
    pub extensions: Vec<crate::v10::AgentExtension>,
}
