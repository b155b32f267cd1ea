//! A2A 1.0's gRPC messages (`lf.a2a.v1`), written from the specification's
//! service definition: the fields the gateway reads or writes. A field not
//! here is skipped when read (protobuf's rule), so an agent on a later 1.x
//! still reads.

use prost_types::{Struct, Timestamp, Value};

/// The service's full name: the first segment of every method path.
pub const SERVICE: &str = "lf.a2a.v1.A2AService";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum TaskState {
    Unspecified = 0,
    Submitted = 1,
    Working = 2,
    Completed = 3,
    Failed = 4,
    Canceled = 5,
    InputRequired = 6,
    Rejected = 7,
    AuthRequired = 8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum Role {
    Unspecified = 0,
    User = 1,
    Agent = 2,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Part {
    #[prost(oneof = "part::Content", tags = "1, 2, 3, 4")]
    pub content: Option<part::Content>,
    #[prost(message, optional, tag = "5")]
    pub metadata: Option<Struct>,
    #[prost(string, tag = "6")]
    pub filename: String,
    #[prost(string, tag = "7")]
    pub media_type: String,
}

pub mod part {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Content {
        #[prost(string, tag = "1")]
        Text(String),
        #[prost(bytes = "vec", tag = "2")]
        Raw(Vec<u8>),
        #[prost(string, tag = "3")]
        Url(String),
        #[prost(message, tag = "4")]
        Data(prost_types::Value),
    }
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
    pub parts: Vec<Part>,
    #[prost(message, optional, tag = "6")]
    pub metadata: Option<Struct>,
    #[prost(string, repeated, tag = "7")]
    pub extensions: Vec<String>,
    #[prost(string, repeated, tag = "8")]
    pub reference_task_ids: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TaskStatus {
    #[prost(enumeration = "TaskState", tag = "1")]
    pub state: i32,
    #[prost(message, optional, tag = "2")]
    pub message: Option<Message>,
    #[prost(message, optional, tag = "3")]
    pub timestamp: Option<Timestamp>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Artifact {
    #[prost(string, tag = "1")]
    pub artifact_id: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(message, repeated, tag = "4")]
    pub parts: Vec<Part>,
    #[prost(message, optional, tag = "5")]
    pub metadata: Option<Struct>,
    #[prost(string, repeated, tag = "6")]
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
    #[prost(message, optional, tag = "4")]
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

/// What a stream carries, one per message; also `SendMessage`'s answer
/// (tags 1 and 2 only).
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
        Message(super::Message),
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
    #[prost(int32, optional, tag = "3")]
    pub history_length: Option<i32>,
    #[prost(bool, tag = "4")]
    pub return_immediately: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SendMessageRequest {
    #[prost(string, tag = "1")]
    pub tenant: String,
    #[prost(message, optional, tag = "2")]
    pub message: Option<Message>,
    #[prost(message, optional, tag = "3")]
    pub configuration: Option<SendMessageConfiguration>,
    #[prost(message, optional, tag = "4")]
    pub metadata: Option<Struct>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetTaskRequest {
    #[prost(string, tag = "1")]
    pub tenant: String,
    #[prost(string, tag = "2")]
    pub id: String,
    #[prost(int32, optional, tag = "3")]
    pub history_length: Option<i32>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct CancelTaskRequest {
    #[prost(string, tag = "1")]
    pub tenant: String,
    #[prost(string, tag = "2")]
    pub id: String,
    #[prost(message, optional, tag = "3")]
    pub metadata: Option<Struct>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SubscribeToTaskRequest {
    #[prost(string, tag = "1")]
    pub tenant: String,
    #[prost(string, tag = "2")]
    pub id: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ListTasksRequest {
    #[prost(string, tag = "1")]
    pub tenant: String,
    #[prost(string, tag = "2")]
    pub context_id: String,
    #[prost(int32, optional, tag = "4")]
    pub page_size: Option<i32>,
    #[prost(string, tag = "5")]
    pub page_token: String,
    #[prost(int32, optional, tag = "6")]
    pub history_length: Option<i32>,
    #[prost(bool, optional, tag = "8")]
    pub include_artifacts: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ListTasksResponse {
    #[prost(message, repeated, tag = "1")]
    pub tasks: Vec<Task>,
    #[prost(string, tag = "2")]
    pub next_page_token: String,
    #[prost(int32, tag = "3")]
    pub page_size: i32,
    #[prost(int32, tag = "4")]
    pub total_size: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct GetExtendedAgentCardRequest {
    #[prost(string, tag = "1")]
    pub tenant: String,
}

/// The card, as far as the gateway uses it: who the agent is, what it
/// can do, and its interfaces (which the gateway's card replaces).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AgentCard {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(message, repeated, tag = "3")]
    pub supported_interfaces: Vec<AgentInterface>,
    #[prost(message, optional, tag = "4")]
    pub provider: Option<AgentProvider>,
    #[prost(string, tag = "5")]
    pub version: String,
    #[prost(string, optional, tag = "6")]
    pub documentation_url: Option<String>,
    #[prost(message, optional, tag = "7")]
    pub capabilities: Option<AgentCapabilities>,
    #[prost(string, repeated, tag = "10")]
    pub default_input_modes: Vec<String>,
    #[prost(string, repeated, tag = "11")]
    pub default_output_modes: Vec<String>,
    #[prost(message, repeated, tag = "12")]
    pub skills: Vec<AgentSkill>,
    #[prost(string, optional, tag = "14")]
    pub icon_url: Option<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AgentInterface {
    #[prost(string, tag = "1")]
    pub url: String,
    #[prost(string, tag = "2")]
    pub protocol_binding: String,
    #[prost(string, tag = "3")]
    pub tenant: String,
    #[prost(string, tag = "4")]
    pub protocol_version: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AgentProvider {
    #[prost(string, tag = "1")]
    pub url: String,
    #[prost(string, tag = "2")]
    pub organization: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AgentCapabilities {
    #[prost(bool, optional, tag = "1")]
    pub streaming: Option<bool>,
    #[prost(bool, optional, tag = "2")]
    pub push_notifications: Option<bool>,
    #[prost(message, repeated, tag = "3")]
    pub extensions: Vec<AgentExtension>,
    #[prost(bool, optional, tag = "4")]
    pub extended_agent_card: Option<bool>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AgentExtension {
    #[prost(string, tag = "1")]
    pub uri: String,
    #[prost(string, tag = "2")]
    pub description: String,
    #[prost(bool, tag = "3")]
    pub required: bool,
    #[prost(message, optional, tag = "4")]
    pub params: Option<Struct>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct AgentSkill {
    #[prost(string, tag = "1")]
    pub id: String,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(string, tag = "3")]
    pub description: String,
    #[prost(string, repeated, tag = "4")]
    pub tags: Vec<String>,
    #[prost(string, repeated, tag = "5")]
    pub examples: Vec<String>,
    #[prost(string, repeated, tag = "6")]
    pub input_modes: Vec<String>,
    #[prost(string, repeated, tag = "7")]
    pub output_modes: Vec<String>,
}

/// A `Value` that is an object's fields, for a `Part`'s data.
pub fn data_object(value: Value) -> Option<Struct> {
    match value.kind {
        Some(prost_types::value::Kind::StructValue(object)) => Some(object),
        _ => None,
    }
}
